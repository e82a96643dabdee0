//! The damped Newton method on the primal, written once for binary Newton ([`super::newton`]:
//! a Cholesky solve of the `(d + 1) x (d + 1)` Hessian) and multinomial Newton-CG
//! (`super::newton_cg`: preconditioned conjugate gradients on Hessian-vector products). The two
//! differ only in how a pass measures a point and how the direction is found ([`Oracle`]); the
//! iteration, the line search, the exit rules and the [`Outcome`] are the same, so they live here
//! (as argmin's executor owns the loop and a solver supplies the step).
//!
//! Each iteration: the certificate at the current point (one [`super::Judge`] check and one
//! `gap_trace` entry), then the exits (converged, out of time; out of epochs once a pass is
//! due), a direction `p` from the oracle, and Armijo backtracking from the full step: `t = 1,
//! 1/2, 1/4, ...` until `P(w + t p) <= P(w) + ARMIJO t g.p`, up to the rounding of `P`. A trial
//! point is measured by the same full pass as an iterate, so an accepted trial already holds the
//! next iteration's gradient and certificate. Every pass counts as an epoch.
//!
//! Certificate (weak duality, no optimality assumed; each oracle's module derives it for its
//! loss): at the duals matched to the scores, `P - D = (1/n) sum_i s_i FY_i + ||g||^2 / (2 l2)`,
//! `FY_i` the rows' Fenchel-Young gaps and `g = grad P`; [`Point::finish`] sums it from these
//! non-negative terms rather than as `P - D`, which would cancel at small gaps.

use super::{Certificate, Clock, Context, Outcome, Status};
use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::BlockLoss;
use crate::math::dot;

/// Sufficient-decrease constant of the Armijo test.
const ARMIJO: f64 = 1e-4;

/// One point and everything its pass measures.
pub(crate) struct Point {
    /// The model, feature-major `(d + 1) x k` (last row: the intercept feature's weights).
    pub w: Vec<f64>,
    /// The duals matched to the scores at `w` (0 for rows of zero weight), `n x k`.
    pub alpha: Vec<f64>,
    /// Per row, `s_i phi''(a_i)`, for an oracle that builds its Hessian from stored curvatures
    /// (binary Newton); empty for Newton-CG, whose Hessian products work from `alpha`.
    pub curve: Vec<f64>,
    /// `P(w)`.
    pub primal: f64,
    /// `P(w) - D(alpha)` (module docs).
    pub gap: f64,
    /// `grad P(w)`.
    pub grad: Vec<f64>,
}

impl Point {
    /// A zero point with `dim` weights, `duals` dual values and `curves` curvatures.
    pub fn new(dim: usize, duals: usize, curves: usize) -> Result<Self> {
        Ok(Self {
            w: crate::budget::zeros(dim)?,
            alpha: crate::budget::zeros(duals)?,
            curve: crate::budget::zeros(curves)?,
            primal: 0.0,
            gap: 0.0,
            grad: crate::budget::zeros(dim)?,
        })
    }

    /// Ends a pass over `n` rows that left in `grad` the loss's part `sum_i s_i phi'(a_i) x~_i`
    /// and summed `loss_sum = sum_i s_i phi(a_i)` and `fy_sum = sum_i s_i FY_i`: scales and adds
    /// the penalty to the gradient, and sets `primal` and `gap` (module docs).
    pub fn finish(&mut self, n: usize, l2: f64, loss_sum: f64, fy_sum: f64) {
        let nf = n as f64;
        // `||g||^2 / (2 l2)` summed as squares of `g / sqrt(2 l2)`: at a tiny `l2` the gradient's
        // squares underflow to 0 while the gap does not (fuzz: l2 = 1e-150, a gap of 7e-182
        // reported as 0).
        let root = (2.0 * l2).sqrt();
        let (mut sq, mut grad_term) = (0.0, 0.0);
        for (g, &wj) in self.grad.iter_mut().zip(&self.w) {
            *g = *g / nf + l2 * wj;
            sq += wj * wj;
            grad_term += (*g / root).powi(2);
        }
        self.primal = loss_sum / nf + 0.5 * l2 * sq;
        self.gap = fy_sum.max(0.0) / nf + grad_term;
    }
}

/// What a damped Newton method needs of its problem: fresh points, a pass that measures one,
/// and the direction from one.
pub(crate) trait Oracle {
    /// A zero point of this problem's sizes ([`Point::new`]).
    fn point(&self) -> Result<Point>;

    /// One pass at `pt.w`: fills every other field of `pt` (ending with [`Point::finish`]).
    fn evaluate(&mut self, pt: &mut Point);

    /// Writes into `step` the (exact or inexact) Newton direction `-H^{-1} g` at `here`, an
    /// iterate that [`Oracle::evaluate`] measured. Passes it makes are epochs of `clock`; when
    /// `clock` runs out first, the status to stop with. Errors when the Hessian overflowed.
    fn direction(&mut self, here: &Point, step: &mut [f64], clock: &mut Clock) -> Result<Option<Status>>;
}

/// [`Oracle::evaluate`] as an epoch of `clock`; whether time is up.
fn pass<O: Oracle>(oracle: &mut O, pt: &mut Point, clock: &mut Clock) -> bool {
    oracle.evaluate(pt);
    clock.add_pass(1.0);
    clock.out_of_time()
}

/// Damped Newton from the model `w` (feature-major; zero for a cold start) on the problem of
/// `oracle`, until the judge of `ctx` accepts the certificate or its clock runs out (module
/// docs). One judge check and one `gap_trace` entry per iterate. Errors when an iterate's
/// objective is not finite, or as [`Oracle::direction`] does.
pub(crate) fn run<D: Rows, L: BlockLoss, O: Oracle>(
    ctx: &mut Context<'_, '_, D, L>,
    oracle: &mut O,
    w: Vec<f64>,
) -> Result<Outcome> {
    let (judge, clock) = (&mut ctx.judge, &mut ctx.clock);
    let (mut here, mut trial) = (oracle.point()?, oracle.point()?);
    let mut step = crate::budget::zeros(here.w.len())?;
    here.w = w;
    let mut gap_trace = Vec::new();
    let mut steps = 0u32;
    let mut late = pass(oracle, &mut here, clock);
    let (status, certificate) = 'iterate: loop {
        let c: Certificate = judge.original(&here.w, &here.alpha, here.primal, here.gap);
        gap_trace.push(c.gap);
        if !(here.primal.is_finite() && c.gap.is_finite()) {
            return Err(SdcaError::NonFiniteResult { what: "the Newton iterate's objective" });
        }
        if judge.met(&c) {
            break (Status::Converged, c);
        }
        if late {
            break (Status::MaxSeconds, c);
        }
        if let Some(status) = oracle.direction(&here, &mut step, clock)? {
            break (status, c);
        }
        let slope = dot(&step, &here.grad);
        // `P` is a sum of `n` rounded terms: near the optimum its decrease drowns in that
        // rounding, and the test would refuse steps that shrink the gap.
        let rounding = 8.0 * f64::EPSILON * here.primal.abs();
        let mut t = 1.0;
        loop {
            if clock.remaining() == 0 {
                break 'iterate (Status::MaxEpochs, c);
            }
            for ((wt, &w), &p) in trial.w.iter_mut().zip(&here.w).zip(&step) {
                *wt = w + t * p;
            }
            late = pass(oracle, &mut trial, clock);
            if trial.primal <= here.primal + ARMIJO * t * slope + rounding {
                std::mem::swap(&mut here, &mut trial);
                steps += 1;
                break;
            }
            if late {
                break 'iterate (Status::MaxSeconds, c);
            }
            t *= 0.5;
        }
    };
    Ok(Outcome {
        w: here.w,
        alpha: here.alpha,
        solved_gap: certificate.gap,
        certificate,
        status,
        gap_trace,
        solver: "newton",
        outer_iterations: steps,
    })
}
