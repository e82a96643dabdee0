//! Shrinking: liblinear's working set for duals in a box.
//!
//! Hsieh et al. (ICML 2008, section 3.2; `solve_l2r_l1l2_svc` in liblinear's `linear.cpp`)
//! observe that at the optimum of the hinge loss's dual most duals sit at a bound of their box,
//! with the dual's slope along them pointing out of it: their steps are clipped to no move.
//! Such rows are dropped from the passes (shrunk) once their slope points outward by more than
//! the largest projected slope of the previous pass, and all come back when the rows kept
//! look solved.
//!
//! In our terms (Shalev-Shwartz & Zhang 2013), the dual along row `i`'s coordinate is
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
//! the trigger is a gap too: the state's running estimate (`super::Estimate`, the weighted
//! Fenchel-Young gaps of the rows a pass keeps, measured before their steps; a dropped row has
//! none when dropped; on CoNLL-2003 within a factor 3 of the certificate's, below it when dropped
//! rows regain gap). When it meets its target every row comes back and the certificate runs. A
//! stop is therefore only ever certified on the full problem; shrinking only changes which rows
//! the passes between two certificates visit.
//!
//! Unlike liblinear we keep the thresholds when the rows come back, and the certificate's pass,
//! which computes every row's score at the certified model anyway, sorts the rows by them
//! (`Shrinking::sort`): the next pass visits only the rows it found unsettled (the ones the
//! certificate found wrong) instead of visiting every row to drop the others at once. That
//! pass was one over all rows per certificate, a fifth of a hinge fit on CoNLL-2003 tokens (to
//! `tol = 1e-7`: 0.23 to 0.18 CPU s together with prefetching each row's own values, 3
//! certificates instead of 4). On CoNLL-2003 tokens (hinge, `l2 = 1e-4`,
//! `tol = 1e-6`) the rows kept fall to about 3,000 of 203,621, so the full passes dominate the
//! time: liblinear's reset together with a certificate at every tenfold drop of the gap took
//! 0.72 s, keeping the thresholds and certifying only at the goal 0.26 s (two certificates).
//! Where most duals stay inside their box (`absolute` and `quantile` there keep about 88% of
//! the rows) shrinking saves little: its passes are cheaper but a few more are needed.
//!
//! Shrinking needs passes that visit each row once (`Sampling::Permutation`): a dropped row
//! leaves the permutation until the rows come back. Uniform draws visit rows repeatedly or not
//! at all, and gap sampling already stops drawing rows whose gap is 0, so neither shrinks.

use crate::config::{FitConfig, Sampling};

/// Whether a plain SDCA fit shrinks: asked for, a permutation per pass, and a loss whose dual
/// is box-linear (the losses with [`crate::loss::Loss::dual_slopes`]).
pub(crate) fn applies(cfg: &FitConfig) -> bool {
    cfg.shrinking && cfg.sampling == Sampling::Permutation && cfg.loss.has_box_linear_dual()
}

/// The thresholds of the passes, owned by the state that runs them.
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
    /// The rows of the pass after a certificate ([`Shrinking::sort`]): those the certificate
    /// found unsettled from the front, the settled ones from the back (empty until then).
    resume: Vec<u32>,
    /// How many rows lead `resume`; `None` when no certificate sorted them since the last
    /// [`Shrinking::resume`].
    resume_kept: Option<usize>,
}

impl Shrinking {
    /// No thresholds yet: the first pass drops nothing.
    pub fn new() -> Self {
        Self {
            up_old: f64::INFINITY,
            down_old: f64::NEG_INFINITY,
            up: f64::NEG_INFINITY,
            down: f64::INFINITY,
            resume: Vec::new(),
            resume_kept: None,
        }
    }

    /// Whether a row with slopes `(up, down)` of `-phi*(-b)` at its dual and score `a` is
    /// settled by the last pass's thresholds (liblinear's rule: a step would not move it).
    #[inline(always)]
    fn settled(&self, (up, down): (f64, f64), a: f64) -> bool {
        up - a < self.down_old && down - a > self.up_old
    }

    /// A visit to a row with slopes `(up, down)` of `-phi*(-b)` at its dual and score `a`:
    /// whether to drop it (its step would not move it).
    #[inline(always)]
    pub fn drops(&mut self, (up, down): (f64, f64), a: f64) -> bool {
        if self.settled((up, down), a) {
            return true;
        }
        let (g_up, g_down) = (up - a, down - a);
        let pg = if g_up > 0.0 {
            g_up
        } else if g_down < 0.0 {
            g_down
        } else {
            0.0
        };
        self.up = self.up.max(pg);
        self.down = self.down.min(pg);
        false
    }

    /// Ends a pass: its extremes become the next pass's thresholds.
    pub fn end_pass(&mut self) {
        self.up_old = if self.up > 0.0 { self.up } else { f64::INFINITY };
        self.down_old = if self.down < 0.0 { self.down } else { f64::NEG_INFINITY };
        self.up = f64::NEG_INFINITY;
        self.down = f64::INFINITY;
    }

    /// Starts sorting the `rows` rows of the passes during a certificate's pass
    /// ([`Shrinking::sort`]); whether there is room (a refused allocation only skips the
    /// sorting: every row then comes back, as without it).
    pub fn start_sort(&mut self, rows: usize) -> bool {
        self.resume_kept = None;
        self.resume.clear();
        if self.resume.try_reserve_exact(rows).is_err() {
            return false;
        }
        self.resume.resize(rows, 0);
        self.resume_kept = Some(0);
        true
    }

    /// Drops the sorting (not every row could be sorted): every row comes back.
    pub fn cancel_sort(&mut self) {
        self.resume_kept = None;
    }

    /// The certificate's pass at row `i` (one of the `rows` of [`Shrinking::start_sort`],
    /// `seen` of them sorted before it), with slopes `(up, down)` and score `a` at the
    /// certified model: unsettled rows go to the front of the next pass, settled ones to the
    /// back. The thresholds and this pass's extremes stay as they are.
    #[inline(always)]
    pub fn sort(&mut self, i: u32, seen: usize, slopes: (f64, f64), a: f64) {
        let Some(kept) = self.resume_kept else { return };
        if self.settled(slopes, a) {
            let back = self.resume.len() - 1 - (seen - kept);
            self.resume[back] = i;
        } else {
            self.resume[kept] = i;
            self.resume_kept = Some(kept + 1);
        }
    }

    /// After a certificate that did not stop the fit: fills `order` (every row of the passes)
    /// with the rows as the certificate sorted them and returns how many lead (the rows its
    /// model left unsettled, which the next pass visits). Without a sorted certificate (or for
    /// another set of rows), every row comes back.
    pub fn resume(&mut self, order: &mut [u32]) -> usize {
        match self.resume_kept.take() {
            Some(kept) if self.resume.len() == order.len() => {
                order.copy_from_slice(&self.resume);
                kept
            }
            _ => order.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::FitParams;
    use crate::data::DenseView;
    use crate::loss::Hinge;
    use crate::reg::L2;
    use crate::solver::sdca::{Objective, State};
    use crate::solver::testing::{shrinking_passes, toy};
    use crate::solver::{fit, row_outputs, FitResult, Problem, Status};

    /// Weights in `{0, 0.5, 1, 2}`: a quarter of the rows have weight 0.
    fn weights(n: usize) -> Vec<f64> {
        (0..n).map(|i| [0.0, 0.5, 1.0, 2.0][(i * 7 + i / 3) % 4]).collect()
    }

    /// With and without shrinking, every box-linear loss, with an intercept and sample weights
    /// (some zero), reaches the same certified optimum: both objectives within the sum of the
    /// certified gaps and both models within their certified radii `sqrt(2 gap / l2)` of the
    /// optimum (the intercept feature is penalised, so it is part of the model here). The
    /// certificate covers every row (the row gaps average to it), and a fit is reproducible.
    #[test]
    fn shrinking_reaches_the_same_optimum() {
        let (n, d, l2) = (400, 5, 1e-2);
        let s = weights(n);
        // Non-smooth losses converge sublinearly: looser targets for the slow regression ones.
        let cases = [("hinge", 1e-8), ("epsilon_insensitive", 1e-7), ("absolute", 1e-6), ("quantile", 1e-6)];
        for (loss, tol) in cases {
            let classification = loss == "hinge";
            let (x, y) = toy(n, d, classification, 3);
            let view = DenseView::new(&x, n, d).unwrap();
            let base = FitParams {
                loss: loss.into(),
                l2,
                tol,
                epsilon: 0.2,
                quantile: 0.7,
                solver: "sdca".into(),
                max_epochs: 100_000,
                ..Default::default()
            };
            let at = |shrinking: bool| {
                let cfg = FitParams { shrinking, ..base.clone() }.check().unwrap();
                let p = Problem::new(&view, &y, Some(&s), cfg.loss).unwrap();
                let r = fit(&p, &cfg).unwrap();
                let rows = row_outputs(&p, &cfg, &r).unwrap();
                let mean = rows.gap.iter().sum::<f64>() / n as f64;
                let c = r.certificate;
                assert_eq!(r.status, Status::Converged, "{loss} shrinking={shrinking}: {c:?}");
                assert!(c.gap <= tol * c.primal, "{loss} shrinking={shrinking}: {c:?}");
                assert!((mean - c.gap).abs() <= 1e-12 + 1e-9 * c.gap, "{loss}: rows {mean} vs {c:?}");
                assert_eq!(r, fit(&p, &cfg).unwrap(), "{loss} shrinking={shrinking}: not reproducible");
                r
            };
            let (plain, shrunk) = (at(false), at(true));
            let (cp, cs) = (plain.certificate, shrunk.certificate);
            let case =
                format!("{loss}: plain {cp:?} in {}, shrunk {cs:?} in {}", plain.epochs, shrunk.epochs);
            assert!((cp.primal - cs.primal).abs() <= cp.gap + cs.gap + 1e-15, "{case}");
            let model = |r: &FitResult| r.coef.iter().copied().chain([r.intercept[0]]).collect::<Vec<_>>();
            let dist = model(&plain).iter().zip(model(&shrunk)).map(|(a, b)| (a - b).powi(2)).sum::<f64>();
            let radius = (2.0 * cp.gap / l2).sqrt() + (2.0 * cs.gap / l2).sqrt();
            assert!(dist.sqrt() <= radius, "{case}: distance {} > {radius}", dist.sqrt());
        }
    }

    /// Uniform and gap sampling do not shrink: the option changes nothing there.
    #[test]
    fn only_permutations_shrink() {
        let (x, y) = toy(200, 4, true, 4);
        let view = DenseView::new(&x, 200, 4).unwrap();
        for sampling in ["uniform", "gap"] {
            let at = |shrinking: bool| {
                let p = FitParams {
                    loss: "hinge".into(),
                    l2: 1e-2,
                    sampling: sampling.into(),
                    shrinking,
                    ..Default::default()
                };
                let cfg = p.check().unwrap();
                fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap()
            };
            let r = at(true);
            assert_eq!(r.status, Status::Converged, "{sampling}");
            assert_eq!(r, at(false), "{sampling}");
        }
    }

    /// A pass drops rows only at a bound of their box, where their step would not move them;
    /// the dropped rows sit at the tail of the order, which keeps every row.
    #[test]
    fn dropped_rows_are_settled() {
        let (n, d, l2) = (300, 4, 1e-2);
        let (x, y) = toy(n, d, true, 5);
        let view = DenseView::new(&x, n, d).unwrap();
        let p = Problem::new(&view, &y, None, crate::loss::LossKind::Hinge).unwrap();
        let row_sq: Vec<f64> = (0..n).map(|i| x[i * d..(i + 1) * d].iter().map(|v| v * v).sum()).collect();
        let mut st = State::new(&p, Hinge, L2, Objective { l2, l1: 0.0, bias: 0.0 }, &row_sq, vec![0.0; n])
            .unwrap()
            .shrinking();
        let kept = shrinking_passes(&mut st, n, 20, |st, before, i| {
            assert_eq!(st.alpha[i], before[i], "row {i} moved after it was dropped");
            let b = st.alpha[i] * y[i];
            assert!(b == 0.0 || b == 1.0, "row {i} dropped inside the box: {b}");
        });
        assert!(kept < n / 2, "only {} of {n} rows dropped", n - kept);
    }

    /// A certificate's pass sorts the rows of the passes (those of positive weight) for the
    /// next pass: each once, the rows it leaves out last, and each of those settled at the
    /// certified model (its step would not move it).
    #[test]
    fn certificates_sort_the_next_pass() {
        use crate::loss::Loss;
        use crate::solver::Coordinate;
        let (n, d, l2) = (300, 4, 1e-2);
        let (x, y) = toy(n, d, true, 5);
        let s = weights(n);
        let view = DenseView::new(&x, n, d).unwrap();
        let p = Problem::new(&view, &y, Some(&s), crate::loss::LossKind::Hinge).unwrap();
        let row_sq = p.row_sq(0.0).unwrap();
        let objective = Objective { l2, l1: 0.0, bias: 0.0 };
        let mut st = State::new(&p, Hinge, L2, objective, &row_sq, vec![0.0; n]).unwrap().shrinking();
        let active: Vec<u32> = Coordinate::active(&st).to_vec();
        assert!(active.len() < n && active.iter().all(|&i| s[i as usize] > 0.0));
        let mut order = active.clone();
        let mut kept = order.len();
        for _ in 0..10 {
            kept = st.pass(&mut order[..kept]);
            Coordinate::settled(&mut st);
        }
        st.evaluate();
        let kept = Coordinate::resume(&mut st, &mut order);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, active, "every row of the passes once");
        assert!(kept > 0 && kept < active.len() / 2, "{kept} of {} kept", active.len());
        let q = |i: usize| row_sq[i] / (l2 * n as f64);
        for &i in &order[kept..] {
            let i = i as usize;
            let a: f64 = (0..d).map(|j| x[i * d + j] * st.w[j]).sum();
            assert_eq!(Hinge.dual_step(st.alpha[i], a, y[i], q(i)), st.alpha[i], "row {i} would move");
        }
        // A second resume without a certificate in between brings every row back.
        assert_eq!(Coordinate::resume(&mut st, &mut order), active.len());
    }
}
