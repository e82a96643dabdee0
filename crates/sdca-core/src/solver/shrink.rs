//! Shrinking: liblinear's working set for duals in a box.
//!
//! Hsieh et al. (ICML 2008, section 3.2; `solve_l2r_l1l2_svc` in liblinear's `linear.cpp`)
//! observe that at the optimum of the hinge loss's dual most duals sit at a bound of their box,
//! with the dual's slope along them pointing out of it: their steps are clipped to no move.
//! Such rows are dropped from the passes (shrunk) once their slope points outward by more than
//! the largest projected slope of the previous pass, and all come back when the rows kept
//! look solved.
//!
//! In our terms (`papers/notes/sdca.md` section 2.1), the dual along row `i`'s coordinate is
//! `-phi*(-b) - (b - alpha_i) a_i - (q_i/2)(b - alpha_i)^2` at the score `a_i = x_i . w + b`,
//! so its one-sided slopes at `b = alpha_i` are `g_up = up - a_i` and `g_down = down - a_i`,
//! with `(up, down)` the slopes of `-phi*(-b)` ([`crate::loss::Loss::dual_slopes`]; infinite
//! out of the box). A move up pays when `g_up > 0`, a move down when `g_down < 0`; the
//! projected slope `PG` is that `g`, or 0 when neither pays. With `M >= 0` and `m <= 0` the
//! largest and smallest `PG` of the previous pass (each replaced by an infinity when it is 0,
//! as in liblinear), a row is dropped when `g_up < m` and `g_down > M`: liblinear's rule,
//! written for any vertex of a box-linear dual. For the hinge these vertices are the box's
//! ends (liblinear's `alpha = 0` and `alpha = C`); `epsilon_insensitive` adds the kink at
//! `b = 0`, where the rows inside its tube sit (liblinear's SVR solver shrinks those too). The
//! slopes carry no sample weight, like liblinear's gradient `G`, so the thresholds compare rows
//! of different weights on one scale. A dropped row's step would have been no move, and its
//! Fenchel-Young gap is 0 when it is dropped.
//!
//! When to bring the rows back and certify. liblinear re-activates every row when the spread
//! `M - m` of the rows kept falls below its `eps`, then stops after a full pass meeting it. Our
//! stop is the relative duality gap over **all** rows (the certificate, `State::evaluate`), so
//! the trigger is a gap too: each pass sums the weighted Fenchel-Young gaps of the rows it keeps,
//! measured before their steps (a dropped row has none), an estimate of the duality gap. When
//! that estimate is below [`SAFETY`] times the gap the fit must reach (`tol P` at the last
//! certificate; before the first one, at once), every row comes back and the certificate runs,
//! in place of the `check_every` schedule. A stop is therefore only ever certified on the full
//! problem; shrinking only changes which rows the passes between two certificates visit.
//! Unlike liblinear we keep the thresholds when the rows come back: the next pass visits every
//! row, keeps those whose step moves them (the ones the certificate found wrong) and drops the
//! others at once instead of one pass later. Measured on CoNLL-2003 tokens (hinge, `l2 = 1e-4`,
//! `tol = 1e-6`), this and checking only at the goal (rather than at a tenth of the last gap)
//! together cut the time of a fit by half: the full passes, not the shrunk ones, dominate it.
//!
//! Shrinking needs passes that visit each row once (`Sampling::Permutation`): a dropped row
//! leaves the permutation until the rows come back. Uniform draws visit rows repeatedly or not
//! at all, and gap sampling already stops drawing rows whose gap is 0, so neither shrinks.

use crate::config::{FitConfig, Sampling};

/// The rows kept are solved down to this fraction of the fit's goal `tol P` before the
/// certificate runs: below the goal, as the rows dropped may have regained some gap.
pub(crate) const SAFETY: f64 = 0.5;

/// Whether a plain SDCA fit shrinks: asked for, a permutation per pass, and a loss whose dual
/// is box-linear (the losses with [`crate::loss::Loss::dual_slopes`]).
pub(crate) fn applies(cfg: &FitConfig) -> bool {
    cfg.shrinking && cfg.sampling == Sampling::Permutation && cfg.loss.has_box_linear_dual()
}

/// The thresholds and the gap estimate of the passes, owned by the state that runs them.
#[derive(Debug, Clone)]
pub(crate) struct Shrinking {
    /// `M` of the previous pass: its largest projected slope, or `+inf`.
    up_old: f64,
    /// `m` of the previous pass: its smallest projected slope, or `-inf`.
    down_old: f64,
    /// Largest projected slope of this pass so far.
    up: f64,
    /// Smallest projected slope of this pass so far.
    down: f64,
    /// `sum_i s_i (phi + phi* + alpha a)` over the rows kept in this pass, before their steps.
    visited: f64,
    /// The mean of `visited` over all `n` rows at which the rows come back and a check is due.
    target: f64,
}

impl Shrinking {
    /// No thresholds yet (the first pass drops nothing) and a check after it.
    pub fn new() -> Self {
        Self {
            up_old: f64::INFINITY,
            down_old: f64::NEG_INFINITY,
            up: f64::NEG_INFINITY,
            down: f64::INFINITY,
            visited: 0.0,
            target: f64::INFINITY,
        }
    }

    /// A visit to a row with slopes `(up, down)` of `-phi*(-b)` at its dual, score `a` and
    /// weighted block gap `gap`: whether to drop it (its step would not move it).
    #[inline(always)]
    pub fn drops(&mut self, (up, down): (f64, f64), a: f64, gap: f64) -> bool {
        let (g_up, g_down) = (up - a, down - a);
        if g_up < self.down_old && g_down > self.up_old {
            return true;
        }
        let pg = if g_up > 0.0 {
            g_up
        } else if g_down < 0.0 {
            g_down
        } else {
            0.0
        };
        self.up = self.up.max(pg);
        self.down = self.down.min(pg);
        self.visited += gap;
        false
    }

    /// Ends a pass: its extremes become the next pass's thresholds.
    pub fn end_pass(&mut self) {
        self.up_old = if self.up > 0.0 { self.up } else { f64::INFINITY };
        self.down_old = if self.down < 0.0 { self.down } else { f64::NEG_INFINITY };
        self.up = f64::NEG_INFINITY;
        self.down = f64::INFINITY;
    }

    /// Whether the last pass's gap estimate, a mean over `n` rows, met the target (then every
    /// row comes back and the certificate runs); starts the next pass's estimate.
    pub fn settled(&mut self, n: usize) -> bool {
        let met = self.visited / n as f64 <= self.target;
        self.visited = 0.0;
        met
    }

    /// Sets the target after a certificate, the fit aiming at the gap `goal` (`tol P`).
    pub fn aim(&mut self, goal: f64) {
        self.target = SAFETY * goal;
    }
}
