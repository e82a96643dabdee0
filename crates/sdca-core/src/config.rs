//! Fit parameters: unchecked as given by the user, checked once into a [`FitConfig`].
//!
//! This is the only place where values are range-checked and names become enums (STYLE.md
//! 2.3). Solver entry points accept only a [`FitConfig`], so an unchecked value cannot reach a
//! solver; the plugin and the Python-side early check both go through [`FitParams::check`].

use crate::error::{Result, SdcaError};
use crate::loss::LossKind;

/// Which solver runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SolverKind {
    /// Damped Newton for a ridge problem with few features and a loss with a second
    /// derivative, else accelerated Prox-SDCA when Shalev-Shwartz & Zhang 2014 Figure 2's
    /// condition `R^2 / (gamma l2) > 10 n` holds for a smooth loss, else plain (Prox-)SDCA (the
    /// rules in `crate::solver`).
    Auto,
    /// (Prox-)SDCA, Shalev-Shwartz & Zhang 2013 and 2012.
    Sdca,
    /// Accelerated Prox-SDCA (Shalev-Shwartz & Zhang 2014 Figure 2); smooth losses only. Runs
    /// whenever its extra ridge weight `kappa = R^2 / (gamma n) - l2` is positive, and falls back
    /// to plain Prox-SDCA (reported as `"sdca"`) when it is not.
    Accelerated,
    /// Primal-dual prox (Yang et al. 2015): full passes, for non-smooth
    /// losses with a box-constrained linear dual (hinge, absolute, epsilon_insensitive, quantile;
    /// also squared) and non-smooth regularizers (L1, elastic net, group norms), `l2 = 0`
    /// allowed.
    Pdprox,
    /// Damped Newton on the primal (`crate::solver::newton`): `l1 = 0`, `l2 > 0`, the losses of
    /// [`LossKind::newton_ready`], at most [`NEWTON_MAX_FEATURES`] features (each iteration
    /// factorises a `(d + 1) x (d + 1)` Hessian); for the multinomial loss, Newton-CG
    /// (`crate::solver::newton_cg`, no feature limit).
    Newton,
    /// Cyclic coordinate descent on the primal with dynamic Gap Safe screening
    /// (`crate::solver::cd`): the squared loss, `l2 = 0` allowed; `auto` picks it for the
    /// squared loss with an L1 penalty.
    Cd,
}

/// The most features `solver="newton"` takes: its `O(d^3)` factorisation per iteration
/// (about 0.1 s at 512) is then no longer small next to SDCA's `O(n d)` epochs.
pub const NEWTON_MAX_FEATURES: usize = 512;

/// The smallest positive `l2` a fit takes. The duals scale with `l2` (`w = sum_i alpha_i x_i /
/// (l2 n)` stays of the size of the data), so far below this their sum `sum_i alpha_i x_i`
/// falls into f64's subnormal range and keeps too few digits for an exact certificate (fuzz:
/// logistic fits at `l2` = 2e-234 and 2e-308 certified gaps 3e-4 and 6e-8 below the
/// recomputed `P - D`). Such an `l2` is zero for any practical purpose: `l2 = 0` with an L1
/// penalty is the Lasso.
pub const MIN_L2: f64 = 1e-100;

/// The smallest `intercept_scaling` a fit takes. The intercept is `b = c w_b` for the weight
/// `w_b` of the constant feature `c`: far below this, `b` falls into f64's subnormal range for
/// any practical `w_b` and keeps too few digits to certify (fuzz: `c = 3e-294` left a Newton gap
/// of `1e-287` against a recomputed 0, and `c = 2.3e-306` an intercept rounded to 0).
pub const MIN_INTERCEPT_SCALING: f64 = 1e-100;

impl SolverKind {
    /// Accepted names.
    pub const NAMES: &'static [&'static str] = &["auto", "sdca", "accelerated", "pdprox", "newton", "cd"];
    /// User-facing name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Sdca => "sdca",
            Self::Accelerated => "accelerated",
            Self::Pdprox => "pdprox",
            Self::Newton => "newton",
            Self::Cd => "cd",
        }
    }
}

/// Order in which coordinates are visited within an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampling {
    /// `n` uniform draws with replacement (the analysed SDCA).
    Uniform,
    /// A fresh random permutation each epoch (SDCA-Perm, usually faster); from 32,768 rows on,
    /// drawn by buckets of 32 consecutive rows, which keeps the memory accesses near each other
    /// (`solver::driver::block_shuffle`).
    Permutation,
    /// Draws proportional to the rows' stored Fenchel-Young gaps, mixed with uniform draws
    /// ([`GAP_NON_UNIFORM`] of them follow the gaps; `crate::sampling`): the duality-gap
    /// sampling of Le Priol et al. 2018 applied to rows. Pays when few rows carry most of the gap
    /// (many rows already fit, e.g. hinge-type losses late in a fit).
    Gap,
}

/// Share of gap-proportional draws under [`Sampling::Gap`] (the paper's 0.8).
pub const GAP_NON_UNIFORM: f64 = 0.8;

impl Sampling {
    /// Accepted names.
    pub const NAMES: &'static [&'static str] = &["uniform", "permutation", "gap"];
    /// User-facing name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Uniform => "uniform",
            Self::Permutation => "permutation",
            Self::Gap => "gap",
        }
    }
}

/// Which Pdprox algorithm runs (Yang et al. 2015).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PdproxVariant {
    /// Pdprox-dual with the algebraic correction (Algorithm 3; the note's recommended default).
    Dual,
    /// Pdprox-primal (Algorithm 2): a corrected primal copy, one dual projection per pass.
    Primal,
}

impl PdproxVariant {
    /// Accepted names.
    pub const NAMES: &'static [&'static str] = &["dual", "primal"];
}

/// Which Pdprox iterate becomes the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PdproxOutput {
    /// The last iterate: exactly sparse (the prox zeroes coordinates), the note's advice for
    /// sparse models (Yang et al. 2015). The default.
    Last,
    /// The running average, the iterate of the O(1/T) bound (Theorem 6); dense.
    Average,
}

impl PdproxOutput {
    /// Accepted names.
    pub const NAMES: &'static [&'static str] = &["last", "average"];
}

/// The norm of each group in a group penalty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupNorm {
    /// Group lasso `sum_g sqrt(d_g) ||w_g||_2` (`d_g` the group's size; Yang et al. 2015 section 5.1).
    L2,
    /// L1-inf `sum_g ||w_g||_inf` (Yang et al. 2015 section 5.2; prox by projection on an L1 ball).
    Linf,
}

impl GroupNorm {
    /// Accepted names.
    pub const NAMES: &'static [&'static str] = &["l2", "linf"];
}

/// A checked group penalty: each feature's group as a dense index `0..n_groups`.
#[derive(Debug, Clone, PartialEq)]
pub struct Groups {
    /// Dense group index of each feature (ids renumbered in order of first appearance).
    pub of: Vec<usize>,
    /// Number of groups.
    pub n_groups: usize,
    /// The norm within each group.
    pub norm: GroupNorm,
}

/// Parameters as the user gave them; wide types so that every bad value reaches
/// [`FitParams::check`] and gets our wording. Deserializable (missing keys take the defaults,
/// unknown keys are an error) so the plugin reads its kwargs straight into it.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FitParams {
    /// Loss name (see [`LossKind::NAMES`]).
    pub loss: String,
    /// `gamma` of `smooth_hinge`.
    pub smoothing: f64,
    /// Tube half-width of `epsilon_insensitive`.
    pub epsilon: f64,
    /// Level `tau` in `(0, 1)` of the `quantile` (pinball) loss.
    pub quantile: f64,
    /// L2 strength, `lambda` of the papers; `> 0`, or `0` together with `l1 > 0` (the Lasso /
    /// pure-L1 problem, solved through the reduction of Shalev-Shwartz & Zhang 2012 section 3.2: see
    /// [`crate::solver::FitResult::l2_used`]).
    pub l2: f64,
    /// L1 strength, `sigma` of Shalev-Shwartz & Zhang 2014 section 6; `>= 0`.
    pub l1: f64,
    /// Solver name.
    pub solver: String,
    /// Sampling name.
    pub sampling: String,
    /// Relative duality-gap tolerance: stop when `gap <= tol * P`.
    pub tol: f64,
    /// Maximum number of epochs (passes over the rows).
    pub max_epochs: i64,
    /// Check the gap every this many epochs (a fit that shrinks checks when its rows look
    /// solved instead, see `shrinking`).
    pub check_every: i64,
    /// Random seed.
    pub seed: i64,
    /// Fit an intercept (as a constant feature, regularized by `l2` only).
    pub fit_intercept: bool,
    /// Value of the constant feature that carries the intercept.
    pub intercept_scaling: f64,
    /// Wall-clock budget in seconds, checked after each epoch.
    pub max_seconds: Option<f64>,
    /// Refuse to start when the solver's estimated storage ([`crate::solver::memory_estimate`])
    /// exceeds this many bytes; `>= 1`.
    pub max_memory: Option<i64>,
    /// Accelerated solver only: `None` (default) runs each inner Prox-SDCA call until its gap
    /// meets the target of Shalev-Shwartz & Zhang 2014 Figure 2; `Some(k)`, `k >= 1`, runs exactly
    /// `k` epochs per inner call with no inner gap check (the practical variant of Remark 1,
    /// which suggests 5).
    pub inner_epochs: Option<i64>,
    /// Pdprox only: a group id per feature; replaces `l1 ||w||_1` by `l1` times the group
    /// penalty of `group_norm`.
    pub groups: Option<Vec<i64>>,
    /// Pdprox only: `"l2"` (group lasso) or `"linf"` (L1-inf), see [`GroupNorm`].
    pub group_norm: String,
    /// Pdprox only: `"last"` or `"average"`, see [`PdproxOutput`].
    pub output: String,
    /// Pdprox only: `"dual"` or `"primal"`, see [`PdproxVariant`].
    pub pdprox_variant: String,
    /// Plain SDCA with `sampling="permutation"` and a loss with a box-linear dual (hinge,
    /// absolute, epsilon_insensitive, quantile): liblinear's shrinking. Passes leave out the
    /// rows whose dual sits at a bound of its box with the dual's slope pointing out of it
    /// (their steps would not move them), and all rows come back when the pass's estimate of
    /// the duality gap meets `tol`; the certificate then runs, always over all rows, instead of
    /// every `check_every` epochs. Ignored for other solvers, samplings and losses. Default
    /// `true`.
    pub shrinking: bool,
    /// Threads of one fit; `>= 1`, `None` for 1 (the plugin resolves `None` to every core for
    /// a lone large fit, `src/threads.rs`). Above 1, plain SDCA on an `l2 > 0` problem with a
    /// binary or regression loss splits the rows into as many partitions and merges their
    /// updates after every pass (shared-memory CoCoA+, `solver::parallel`); other fits ignore
    /// it.
    pub n_threads: Option<i64>,
}

/// The defaults of the option schema ([`crate::options::FIT_OPTIONS`]), read at compile time.
impl Default for FitParams {
    fn default() -> Self {
        use crate::options::{boolean, float, int, text, FIT_OPTIONS as O};
        Self {
            loss: const { text(O, "loss") }.into(),
            smoothing: const { float(O, "smoothing") },
            epsilon: const { float(O, "epsilon") },
            quantile: const { float(O, "quantile") },
            l2: const { float(O, "l2") },
            l1: const { float(O, "l1") },
            solver: const { text(O, "solver") }.into(),
            sampling: const { text(O, "sampling") }.into(),
            tol: const { float(O, "tol") },
            max_epochs: const { int(O, "max_epochs") },
            check_every: const { int(O, "check_every") },
            seed: const { int(O, "seed") },
            fit_intercept: const { boolean(O, "fit_intercept") },
            intercept_scaling: const { float(O, "intercept_scaling") },
            max_seconds: None,
            max_memory: None,
            // Not a user option: the core's benchmarks of Remark 1's practical variant.
            inner_epochs: None,
            groups: None,
            group_norm: const { text(O, "group_norm") }.into(),
            output: const { text(O, "output") }.into(),
            pdprox_variant: const { text(O, "pdprox_variant") }.into(),
            shrinking: const { boolean(O, "shrinking") },
            n_threads: None,
        }
    }
}

/// A stop check asked after every epoch (the plugin passes its Ctrl-C flag). Any two compare
/// equal: the check does not change the problem being solved.
#[derive(Clone, Copy)]
pub struct Interrupt(pub fn() -> bool);

impl Interrupt {
    /// Whether the fit should stop now.
    #[inline]
    pub fn requested(&self) -> bool {
        (self.0)()
    }
}

impl PartialEq for Interrupt {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Interrupt")
    }
}

/// Checked parameters; only [`FitParams::check`] builds one.
// The private `_checked` field (not `#[non_exhaustive]`) also keeps the rest of this crate from
// building an unchecked config.
#[allow(clippy::manual_non_exhaustive)]
#[derive(Debug, Clone, PartialEq)]
pub struct FitConfig {
    /// The loss and its parameters.
    pub loss: LossKind,
    /// L2 strength, `> 0`, or `0` when `l1 > 0` (Lasso reduction).
    pub l2: f64,
    /// L1 strength, `>= 0`; `> 0` when `l2 == 0`.
    pub l1: f64,
    /// Requested solver.
    pub solver: SolverKind,
    /// Coordinate order.
    pub sampling: Sampling,
    /// Relative gap tolerance, `> 0`.
    pub tol: f64,
    /// Epoch cap, `>= 1`.
    pub max_epochs: u32,
    /// Gap check period in epochs, `>= 1`.
    pub check_every: u32,
    /// RNG seed.
    pub seed: u64,
    /// Constant feature value carrying the intercept; `0` when no intercept is fitted.
    pub intercept_scaling: f64,
    /// Wall-clock budget.
    pub max_seconds: Option<f64>,
    /// Storage cap in bytes for the solver's own arrays.
    pub max_memory: Option<u64>,
    /// The memory budget in bytes when `max_memory` is unset ([`crate::budget`]); `None` after
    /// `check` (no limit): the caller sets it (the plugin passes half of the machine's memory).
    pub memory_budget: Option<u64>,
    /// Asked after every epoch: `true` stops the fit with [`crate::solver::Status::Interrupted`]
    /// (the plugin passes its SIGINT check, so Ctrl-C stops a long `collect()`). `None` after
    /// `check`; the caller sets it.
    pub interrupt: Option<Interrupt>,
    /// Epochs per inner call of the accelerated solver (`None`: inner gap target).
    pub inner_epochs: Option<u32>,
    /// Pdprox: the group penalty replacing the L1 term (`None`: plain L1).
    pub groups: Option<Groups>,
    /// Pdprox: the iterate returned.
    pub output: PdproxOutput,
    /// Pdprox: the algorithm.
    pub pdprox_variant: PdproxVariant,
    /// Whether plain SDCA may shrink (see [`FitParams::shrinking`]).
    pub shrinking: bool,
    /// Threads of one fit (see [`FitParams::n_threads`]); `None` is 1.
    pub n_threads: Option<usize>,
    _checked: (),
}

impl FitConfig {
    /// This config with a smaller budget: at most `max_epochs` (at least 1) and, where given,
    /// `max_seconds` (a fit handed from one solver to another runs on what the first left).
    pub(crate) fn limited(&self, max_epochs: u32, max_seconds: Option<f64>) -> Self {
        Self { max_epochs: max_epochs.clamp(1, self.max_epochs), max_seconds, ..self.clone() }
    }

    /// The memory budget of this fit: `max_memory`, else `memory_budget` ([`crate::budget`]).
    pub fn budget(&self) -> crate::budget::Budget {
        crate::budget::Budget::new(self.max_memory, self.memory_budget)
    }
}

fn invalid(name: &'static str, message: impl Into<String>) -> SdcaError {
    SdcaError::InvalidParameter { name, message: message.into() }
}

fn one_of<T: Copy>(name: &'static str, got: &str, allowed: &[&str], values: &[T]) -> Result<T> {
    allowed.iter().position(|a| *a == got).map(|k| values[k]).ok_or_else(|| {
        invalid(name, format!("unknown value {got:?}; expected one of {}", allowed.join(", ")))
    })
}

/// What `solver="newton"` needs that the config can see (the feature count is checked at fit
/// time): a loss with a second derivative (the multinomial one runs Newton-CG), and a ridge
/// penalty only.
fn check_newton(loss: LossKind, l2: f64, l1: f64) -> Result<()> {
    if !(loss.newton_ready() || loss == LossKind::Multinomial) {
        return Err(invalid(
            "solver",
            format!(
                "\"newton\" needs a loss with a second derivative (logistic, squared, \
                 squared_hinge, smooth_hinge, multinomial), and loss {:?} has none; use \
                 solver=\"auto\" or \"sdca\"",
                loss.name()
            ),
        ));
    }
    if l2 == 0.0 {
        return Err(invalid("l2", "got 0 with solver=\"newton\" (the Lasso is not smooth), which needs l2 > 0; set l2 > 0 or use solver=\"auto\""));
    }
    if l1 > 0.0 {
        return Err(invalid(
            "l1",
            format!("got {l1} with solver=\"newton\", which solves ridge problems only; set l1 = 0 or use solver=\"auto\""),
        ));
    }
    Ok(())
}

fn finite_in(name: &'static str, x: f64, ok: bool, want: &str) -> Result<f64> {
    if x.is_finite() && ok {
        Ok(x)
    } else {
        Err(invalid(name, format!("got {x}; must be a finite number {want}")))
    }
}

impl FitParams {
    /// Checks every value and converts names to enums.
    pub fn check(&self) -> Result<FitConfig> {
        let loss = match self.loss.as_str() {
            "hinge" => LossKind::Hinge,
            "smooth_hinge" => LossKind::SmoothHinge {
                smoothing: finite_in("smoothing", self.smoothing, self.smoothing > 0.0, "> 0")?,
            },
            "squared_hinge" => LossKind::SquaredHinge,
            "logistic" => LossKind::Logistic,
            "squared" => LossKind::Squared,
            "absolute" => LossKind::Absolute,
            "epsilon_insensitive" => LossKind::EpsilonInsensitive {
                epsilon: finite_in("epsilon", self.epsilon, self.epsilon >= 0.0, ">= 0")?,
            },
            "quantile" => LossKind::Quantile {
                quantile: finite_in(
                    "quantile",
                    self.quantile,
                    self.quantile > 0.0 && self.quantile < 1.0,
                    "in (0, 1) (the quantile level tau)",
                )?,
            },
            "multiclass_hinge" => LossKind::MulticlassHinge { smoothing: 0.0 },
            "multiclass_smooth_hinge" => LossKind::MulticlassHinge {
                smoothing: finite_in("smoothing", self.smoothing, self.smoothing > 0.0, "> 0")?,
            },
            "multinomial" => LossKind::Multinomial,
            other => {
                return Err(invalid(
                    "loss",
                    format!("unknown loss {other:?}; expected one of {}", LossKind::NAMES.join(", ")),
                ))
            }
        };
        let l1 = finite_in("l1", self.l1, self.l1 >= 0.0, ">= 0")?;
        let l2 = finite_in("l2", self.l2, self.l2 >= 0.0, ">= 0 (the L2 strength lambda)")?;
        if l2 > 0.0 && l2 < MIN_L2 {
            return Err(invalid(
                "l2",
                format!(
                    "got {l2:e}, below the smallest positive l2 of {MIN_L2:e} (the duals would fall \
                     below f64's precision and the certificate could not be exact); pass l2 = 0 \
                     with l1 > 0 (the Lasso) or l2 >= {MIN_L2:e}"
                ),
            ));
        }
        if l2 == 0.0 && l1 == 0.0 {
            return Err(invalid(
                "l2",
                "got 0 with l1 = 0: the problem has no strongly convex part; \
                 set l2 > 0 (ridge / elastic net) or l1 > 0 (Lasso, solved by the l2 reduction)",
            ));
        }
        if l2 == 0.0 && loss.is_multiclass() {
            return Err(invalid(
                "l2",
                format!(
                    "got 0 with the multiclass loss {:?}: the Lasso reduction covers binary and \
                     regression losses only; set l2 > 0",
                    loss.name()
                ),
            ));
        }
        let solver = one_of(
            "solver",
            &self.solver,
            SolverKind::NAMES,
            &[
                SolverKind::Auto,
                SolverKind::Sdca,
                SolverKind::Accelerated,
                SolverKind::Pdprox,
                SolverKind::Newton,
                SolverKind::Cd,
            ],
        )?;
        if solver == SolverKind::Newton {
            check_newton(loss, l2, l1)?;
        }
        if solver == SolverKind::Pdprox && !loss.pdprox_ready() {
            return Err(invalid(
                "solver",
                format!(
                    "\"pdprox\" needs a loss with a box-constrained linear dual (hinge, absolute, \
                     epsilon_insensitive, quantile) or squared, and loss {:?} is neither; use \
                     solver=\"sdca\" or \"auto\" for it, or one of those losses",
                    loss.name()
                ),
            ));
        }
        let groups = self.check_groups(solver, l1)?;
        let output = one_of(
            "output",
            &self.output,
            PdproxOutput::NAMES,
            &[PdproxOutput::Last, PdproxOutput::Average],
        )?;
        let pdprox_variant = one_of(
            "pdprox_variant",
            &self.pdprox_variant,
            PdproxVariant::NAMES,
            &[PdproxVariant::Dual, PdproxVariant::Primal],
        )?;
        if solver == SolverKind::Accelerated && loss.smoothness() <= 0.0 {
            return Err(invalid(
                "solver",
                format!(
                    "\"accelerated\" needs a smooth loss and loss {:?} is not smooth; \
                     use solver=\"sdca\" or \"auto\", or a smooth loss \
                     (smooth_hinge, squared_hinge, logistic, squared, multiclass_smooth_hinge, \
                     multinomial)",
                    loss.name()
                ),
            ));
        }
        let sampling = one_of(
            "sampling",
            &self.sampling,
            Sampling::NAMES,
            &[Sampling::Uniform, Sampling::Permutation, Sampling::Gap],
        )?;
        let tol = finite_in("tol", self.tol, self.tol > 0.0, "> 0 (a relative duality gap)")?;
        if !(1..=u32::MAX as i64).contains(&self.max_epochs) {
            return Err(invalid("max_epochs", format!("got {}; must be >= 1", self.max_epochs)));
        }
        if !(1..=u32::MAX as i64).contains(&self.check_every) {
            return Err(invalid("check_every", format!("got {}; must be >= 1", self.check_every)));
        }
        if self.seed < 0 {
            return Err(invalid("seed", format!("got {}; must be >= 0", self.seed)));
        }
        let scaling = finite_in(
            "intercept_scaling",
            self.intercept_scaling,
            self.intercept_scaling >= MIN_INTERCEPT_SCALING,
            ">= 1e-100",
        )?;
        if let Some(s) = self.max_seconds {
            finite_in("max_seconds", s, s > 0.0, "> 0")?;
        }
        let max_memory = match self.max_memory {
            None => None,
            Some(m) if m >= 1 => Some(m as u64),
            Some(m) => return Err(invalid("max_memory", format!("got {m}; must be >= 1 (bytes), or None"))),
        };
        let inner_epochs = match self.inner_epochs {
            None => None,
            Some(k) if (1..=u32::MAX as i64).contains(&k) => Some(k as u32),
            Some(k) => {
                return Err(invalid(
                    "inner_epochs",
                    format!(
                        "got {k}; must be >= 1 (epochs per inner call), or None for the inner gap target"
                    ),
                ))
            }
        };
        let n_threads = match self.n_threads {
            None => None,
            Some(t) if (1..=1 << 16).contains(&t) => Some(t as usize),
            Some(t) => {
                return Err(invalid(
                    "n_threads",
                    format!("got {t}; must be an integer in 1..=65536, or None"),
                ))
            }
        };
        Ok(FitConfig {
            loss,
            l2,
            l1,
            solver,
            sampling,
            tol,
            max_epochs: self.max_epochs as u32,
            check_every: self.check_every as u32,
            seed: self.seed as u64,
            intercept_scaling: if self.fit_intercept { scaling } else { 0.0 },
            max_seconds: self.max_seconds,
            max_memory,
            memory_budget: None,
            interrupt: None,
            inner_epochs,
            groups,
            output,
            pdprox_variant,
            shrinking: self.shrinking,
            n_threads,
            _checked: (),
        })
    }

    /// `groups` and `group_norm`: ids renumbered densely; only Pdprox has group penalties, and
    /// their weight is `l1`. The length is checked against the data at fit time.
    fn check_groups(&self, solver: SolverKind, l1: f64) -> Result<Option<Groups>> {
        let norm =
            one_of("group_norm", &self.group_norm, GroupNorm::NAMES, &[GroupNorm::L2, GroupNorm::Linf])?;
        let Some(ids) = &self.groups else {
            if norm != GroupNorm::L2 {
                return Err(invalid(
                    "group_norm",
                    "applies to a group penalty; pass groups (a group id per feature) as well",
                ));
            }
            return Ok(None);
        };
        if solver != SolverKind::Pdprox {
            return Err(invalid(
                "groups",
                format!(
                    "group penalties are solved by solver=\"pdprox\" only, got solver={:?}; \
                     pass solver=\"pdprox\" or drop groups",
                    self.solver
                ),
            ));
        }
        if l1 == 0.0 {
            return Err(invalid("groups", "the group penalty's weight is l1 and l1 = 0; set l1 > 0"));
        }
        if ids.is_empty() {
            return Err(invalid("groups", "is empty; pass one group id per feature"));
        }
        let mut dense: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
        let of = ids
            .iter()
            .map(|id| {
                let next = dense.len();
                *dense.entry(*id).or_insert(next)
            })
            .collect();
        Ok(Some(Groups { of, n_groups: dense.len(), norm }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_check() {
        let cfg = FitParams::default().check().unwrap();
        assert_eq!(cfg.loss, LossKind::Logistic);
        assert_eq!(cfg.intercept_scaling, 1.0);
    }

    #[test]
    fn bad_values_name_the_parameter() {
        let cases: Vec<(FitParams, &str)> = vec![
            (FitParams { loss: "hinj".into(), ..Default::default() }, "loss"),
            (FitParams { l2: 0.0, ..Default::default() }, "l2"),
            (FitParams { l2: -1e-3, l1: 1.0, ..Default::default() }, "l2"),
            (FitParams { l2: f64::INFINITY, ..Default::default() }, "l2"),
            (FitParams { l1: f64::NAN, ..Default::default() }, "l1"),
            (FitParams { inner_epochs: Some(0), ..Default::default() }, "inner_epochs"),
            (FitParams { inner_epochs: Some(-5), ..Default::default() }, "inner_epochs"),
            (FitParams { inner_epochs: Some(1 << 40), ..Default::default() }, "inner_epochs"),
            (FitParams { solver: "accelerate".into(), ..Default::default() }, "solver"),
            (
                FitParams { solver: "accelerated".into(), loss: "hinge".into(), ..Default::default() },
                "solver",
            ),
            (
                FitParams { solver: "accelerated".into(), loss: "absolute".into(), ..Default::default() },
                "solver",
            ),
            (FitParams { l2: f64::NAN, ..Default::default() }, "l2"),
            (FitParams { l1: -1.0, ..Default::default() }, "l1"),
            (FitParams { tol: 0.0, ..Default::default() }, "tol"),
            (FitParams { max_epochs: 0, ..Default::default() }, "max_epochs"),
            (FitParams { solver: "lbfgs".into(), ..Default::default() }, "solver"),
            (FitParams { solver: "newton".into(), loss: "hinge".into(), ..Default::default() }, "solver"),
            (
                FitParams { solver: "newton".into(), loss: "multiclass_hinge".into(), ..Default::default() },
                "solver",
            ),
            (FitParams { solver: "newton".into(), l1: 1e-3, ..Default::default() }, "l1"),
            (FitParams { solver: "newton".into(), l2: 0.0, l1: 1e-3, ..Default::default() }, "l2"),
            (FitParams { sampling: "cyclic".into(), ..Default::default() }, "sampling"),
            (FitParams { loss: "smooth_hinge".into(), smoothing: 0.0, ..Default::default() }, "smoothing"),
            (FitParams { seed: -3, ..Default::default() }, "seed"),
            (FitParams { max_memory: Some(0), ..Default::default() }, "max_memory"),
            (FitParams { loss: "quantile".into(), quantile: 1.0, ..Default::default() }, "quantile"),
            (FitParams { loss: "quantile".into(), quantile: 0.0, ..Default::default() }, "quantile"),
            (FitParams { solver: "pdprox".into(), ..Default::default() }, "solver"),
            (
                FitParams { solver: "pdprox".into(), loss: "squared_hinge".into(), ..Default::default() },
                "solver",
            ),
            (FitParams { groups: Some(vec![0, 1]), l1: 1e-3, ..Default::default() }, "groups"),
            (pdprox("hinge", FitParams { groups: Some(vec![0, 1]), ..Default::default() }), "groups"),
            (pdprox("hinge", FitParams { groups: Some(vec![]), l1: 0.1, ..Default::default() }), "groups"),
            (pdprox("hinge", FitParams { group_norm: "linf".into(), ..Default::default() }), "group_norm"),
            (pdprox("hinge", FitParams { group_norm: "l3".into(), ..Default::default() }), "group_norm"),
            (pdprox("hinge", FitParams { output: "best".into(), ..Default::default() }), "output"),
            (
                pdprox("hinge", FitParams { pdprox_variant: "both".into(), ..Default::default() }),
                "pdprox_variant",
            ),
        ];
        for (p, name) in cases {
            let err = p.check().unwrap_err();
            assert!(matches!(err, SdcaError::InvalidParameter { name: n, .. } if n == name), "{err}");
        }
        let msg = FitParams { loss: "hinj".into(), ..Default::default() }.check().unwrap_err().to_string();
        assert!(msg.contains("expected one of hinge"), "{msg}");
        let msg = FitParams { solver: "lbfgs".into(), ..Default::default() }.check().unwrap_err().to_string();
        assert!(msg.contains("auto, sdca, accelerated, pdprox, newton"), "{msg}");
        let p = FitParams { solver: "newton".into(), loss: "multiclass_hinge".into(), ..Default::default() };
        let msg = p.check().unwrap_err().to_string();
        assert!(msg.contains("has none") && msg.contains("solver=\"auto\""), "{msg}");
        for loss in ["logistic", "squared", "squared_hinge", "smooth_hinge", "multinomial"] {
            let p = FitParams { solver: "newton".into(), loss: loss.into(), ..Default::default() };
            assert_eq!(p.check().unwrap().solver, SolverKind::Newton, "{loss}");
        }
        let msg = FitParams { l2: 0.0, l1: 0.0, ..Default::default() }.check().unwrap_err().to_string();
        assert!(msg.contains("`l2`") && msg.contains("l1 > 0"), "{msg}");
    }

    #[test]
    fn l2_below_the_floor_is_refused_with_the_alternatives() {
        for l2 in [2.1e-308, 2.3e-234, 9.9e-101] {
            let msg = FitParams { l2, ..Default::default() }.check().unwrap_err().to_string();
            assert!(msg.contains("`l2`") && msg.contains("1e-100") && msg.contains("l2 = 0"), "{msg}");
        }
        assert_eq!(FitParams { l2: MIN_L2, ..Default::default() }.check().unwrap().l2, MIN_L2);
        assert_eq!(FitParams { l2: 0.0, l1: 1e-3, ..Default::default() }.check().unwrap().l2, 0.0);
    }

    fn pdprox(loss: &str, p: FitParams) -> FitParams {
        FitParams { solver: "pdprox".into(), loss: loss.into(), ..p }
    }

    #[test]
    fn pdprox_params_check() {
        let p = FitParams { l2: 0.0, l1: 0.1, groups: Some(vec![7, 3, 7]), ..Default::default() };
        let cfg = pdprox("quantile", FitParams { quantile: 0.9, ..p }).check().unwrap();
        assert_eq!(cfg.loss, LossKind::Quantile { quantile: 0.9 });
        let g = cfg.groups.unwrap();
        assert_eq!((g.of, g.n_groups, g.norm), (vec![0, 1, 0], 2, GroupNorm::L2));
        assert_eq!((cfg.output, cfg.pdprox_variant), (PdproxOutput::Last, PdproxVariant::Dual));
        for loss in ["hinge", "absolute", "epsilon_insensitive", "quantile", "squared"] {
            assert!(pdprox(loss, FitParams::default()).check().is_ok(), "{loss}");
        }
        let msg = pdprox("logistic", FitParams::default()).check().unwrap_err().to_string();
        assert!(msg.contains("`solver`") && msg.contains("solver=\"sdca\""), "{msg}");
    }

    #[test]
    fn lasso_and_accelerated_params_check() {
        // l2 = 0 is the Lasso only when l1 > 0.
        let cfg = FitParams { l2: 0.0, l1: 1e-3, ..Default::default() }.check().unwrap();
        assert_eq!((cfg.l2, cfg.l1), (0.0, 1e-3));
        let p = FitParams { solver: "accelerated".into(), inner_epochs: Some(5), ..Default::default() };
        let cfg = p.check().unwrap();
        assert_eq!((cfg.solver, cfg.inner_epochs), (SolverKind::Accelerated, Some(5)));
        assert_eq!(FitParams::default().check().unwrap().inner_epochs, None);
        for loss in ["smooth_hinge", "squared_hinge", "logistic", "squared"] {
            let p = FitParams { solver: "accelerated".into(), loss: loss.into(), ..Default::default() };
            assert!(p.check().is_ok(), "{loss}");
        }
    }

    #[test]
    fn send_sync() {
        fn ok<T: Send + Sync>() {}
        ok::<FitConfig>();
        ok::<FitParams>();
        ok::<SdcaError>();
    }
}
