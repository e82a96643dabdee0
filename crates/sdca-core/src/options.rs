//! The one schema of user options: names, value kinds, defaults, allowed values, one line of
//! help, and which solvers and losses each applies to.
//!
//! Everything else derives from these tables or is checked against them: the defaults of
//! [`crate::FitParams`] and [`crate::crf::CrfParams`] are read from here at compile time, the
//! plugin exports the tables to Python (`polars_sdca._internal.fit_options()`), from which the
//! Python functions take their defaults and type checks and the command line builds its flags
//! (with help and choices); the Python signatures, `_typing` literals, scikit-learn parameters
//! and type stubs are pinned to them by tests. Values are range-checked in one place,
//! [`crate::FitParams::check`] / [`crate::crf::CrfParams::check`]; names become enums there,
//! from the same `NAMES` lists the choices here point to.

use crate::config::{GroupNorm, PdproxOutput, PdproxVariant, Sampling, SolverKind};
use crate::crf::CrfSampling;
use crate::cv::{Scoring, SELECT};
use crate::loss::LossKind;

/// What `null_policy=` accepts: rows holding a null raise, or are dropped (linear fits only).
pub const NULL_POLICIES: &[&str] = &["raise", "drop"];
/// What `null_policy=` accepts for CRFs: a dropped token would split its sequence.
pub const CRF_NULL_POLICIES: &[&str] = &["raise"];
/// What `on_error=` accepts: a failed group raises, or yields a null model with its status.
pub const ON_ERROR: &[&str] = &["raise", "null"];

/// The kind of value an option takes, as Python passes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A real number.
    Float,
    /// An integer.
    Int,
    /// A boolean.
    Bool,
    /// One of the listed names.
    Choice(&'static [&'static str]),
    /// A list of integers (one group id per feature).
    IntList,
    /// A column name or expression (an extra input of the plugin).
    Column,
    /// A fitted model (a struct column, dict or one-row frame).
    Model,
}

/// A default value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// A real number.
    Float(f64),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A name (of a [`Kind::Choice`]).
    Text(&'static str),
    /// No value: the option is optional and off (or derived from the data).
    Null,
}

/// One user option.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spec {
    /// The keyword, the same word in Rust, Python and the command line (with `-` for `_`).
    pub name: &'static str,
    /// Its kind of value.
    pub kind: Kind,
    /// Its default; [`Value::Null`] only for an optional option.
    pub default: Value,
    /// One line of help.
    pub help: &'static str,
    /// Which solvers and losses it applies to (`"all"` when every fit reads it).
    pub applies: &'static str,
}

const fn spec(
    name: &'static str,
    kind: Kind,
    default: Value,
    help: &'static str,
    applies: &'static str,
) -> Spec {
    Spec { name, kind, default, help, applies }
}

use Kind::{Bool, Choice, Column, Float, Int, IntList, Model};
use Value::{Null, Text};

/// The options of `fit`, `fit_rows`, `fit_groups` (and the estimators and command line built on
/// them), in the order the docs list them.
pub const FIT_OPTIONS: &[Spec] = &[
    spec("loss", Choice(LossKind::NAMES), Text("logistic"), "the loss phi of the objective", "all"),
    spec(
        "l2",
        Float,
        Value::Float(1e-4),
        "L2 strength lambda (0 or >= 1e-100; 0 with l1 > 0 is the Lasso)",
        "all",
    ),
    spec(
        "l1",
        Float,
        Value::Float(0.0),
        "L1 strength (elastic net; the group penalty's weight with groups)",
        "all",
    ),
    spec(
        "smoothing",
        Float,
        Value::Float(1.0),
        "width gamma of the quadratic piece",
        "loss: smooth_hinge, multiclass_smooth_hinge",
    ),
    spec(
        "epsilon",
        Float,
        Value::Float(0.1),
        "half-width of the insensitive tube",
        "loss: epsilon_insensitive",
    ),
    spec("quantile", Float, Value::Float(0.5), "level of the pinball loss, in (0, 1)", "loss: quantile"),
    spec(
        "solver",
        Choice(SolverKind::NAMES),
        Text("auto"),
        "the solver (auto picks newton, cd, accelerated or sdca)",
        "all",
    ),
    spec(
        "sampling",
        Choice(Sampling::NAMES),
        Text("permutation"),
        "order of the coordinate steps",
        "solver: sdca, accelerated",
    ),
    spec("tol", Float, Value::Float(1e-6), "stop when the duality gap <= tol * primal", "all"),
    spec("max_epochs", Int, Value::Int(500), "epoch cap (passes over the rows)", "all"),
    spec(
        "check_every",
        Int,
        Value::Int(1),
        "duality-gap check period in epochs",
        "solver: sdca, accelerated, pdprox",
    ),
    spec("seed", Int, Value::Int(0), "random seed: the same seed gives the same model", "all"),
    spec(
        "fit_intercept",
        Bool,
        Value::Bool(true),
        "fit an intercept (a constant feature regularized by l2)",
        "all",
    ),
    spec("intercept_scaling", Float, Value::Float(1.0), "value of the constant intercept feature", "all"),
    spec(
        "shrinking",
        Bool,
        Value::Bool(true),
        "skip rows settled at a bound of their dual box (liblinear's shrinking)",
        "solver: sdca; sampling: permutation; loss: hinge, absolute, epsilon_insensitive, quantile",
    ),
    spec("max_seconds", Float, Null, "time budget in seconds (the model then says converged=false)", "all"),
    spec("max_memory", Int, Null, "bytes the solver may allocate per fit", "all"),
    spec("groups", IntList, Null, "a group id per feature: l1 weighs the group penalty", "solver: pdprox"),
    spec(
        "group_norm",
        Choice(GroupNorm::NAMES),
        Text("l2"),
        "norm of each group in the group penalty",
        "solver: pdprox",
    ),
    spec(
        "output",
        Choice(PdproxOutput::NAMES),
        Text("last"),
        "the last iterate (sparse) or the running average",
        "solver: pdprox",
    ),
    spec(
        "pdprox_variant",
        Choice(PdproxVariant::NAMES),
        Text("dual"),
        "Pdprox-dual (Algorithm 3) or Pdprox-primal (Algorithm 2)",
        "solver: pdprox",
    ),
    spec("weights", Column, Null, "sample-weight column (s_i >= 0)", "all"),
    spec("warm_start", Model, Null, "start from a fitted model of the same width", "all"),
    spec("n_features", Int, Null, "sparse width (default: largest index + 1)", "sparse features"),
    spec("null_policy", Choice(NULL_POLICIES), Text("raise"), "rows with nulls raise, or are dropped", "all"),
    spec(
        "on_error",
        Choice(ON_ERROR),
        Text("raise"),
        "a failed group raises, or yields a null model with its status",
        "all",
    ),
];

/// The grid options of `fit_path` and `fit_cv`, on top of [`FIT_OPTIONS`] (whose `l1` or `l2`
/// may there be a list of values: the grid itself). `l1_ratio` is one number, or for `fit_cv`
/// a list of them ([`crate::solver::PathParams::check_each`] checks each).
pub const PATH_OPTIONS: &[Spec] = &[
    spec(
        "n_l1",
        Int,
        Value::Int(100),
        "number of l1 values, from l1_max (the smallest l1 whose model is zero) down",
        "l1 paths (l1 not a list)",
    ),
    spec(
        "l1_min_ratio",
        Float,
        Value::Float(1e-3),
        "the smallest computed l1 over l1_max, in (0, 1)",
        "l1 paths (l1 not a list)",
    ),
    spec(
        "n_l2",
        Int,
        Null,
        "number of l2 values of a ridge-type path, from 1e4 / n down",
        "l2 paths (l2 not a list)",
    ),
    spec(
        "l2_min_ratio",
        Float,
        Value::Float(1e-8),
        "the smallest computed l2 over the largest, in (0, 1)",
        "l2 paths (l2 not a list)",
    ),
    spec(
        "l1_ratio",
        Float,
        Null,
        "scikit-learn's ElasticNet mixing, in (0, 1]: the l1 path ties l2 = l1 (1 - l1_ratio) / l1_ratio (alpha = l1 / l1_ratio); fit_cv also takes a list (one path per value, the pair chosen)",
        "l1 paths (l2 not a list)",
    ),
    spec(
        "screening",
        Bool,
        Value::Bool(true),
        "Gap Safe screening: features proven zero by the previous model leave each fit",
        "l1 > 0 with squared, logistic, smooth_hinge or squared_hinge",
    ),
];

/// The cross-validation options of `fit_cv`, on top of [`FIT_OPTIONS`] and [`PATH_OPTIONS`].
pub const CV_OPTIONS: &[Spec] = &[
    spec(
        "folds",
        Int,
        Value::Int(5),
        "number of folds drawn from the seed (stratified for classification losses)",
        "fit_cv without fold_column",
    ),
    spec("fold_column", Column, Null, "a column whose values give each row's fold", "fit_cv"),
    spec(
        "scoring",
        Choice(Scoring::NAMES),
        Text("auto"),
        "held-out score (auto: log_loss for logistic / multinomial, accuracy for other classifiers, squared_error for regression)",
        "fit_cv",
    ),
    spec(
        "select",
        Choice(SELECT),
        Text("best"),
        "the best mean score, or the largest penalty within one standard error of it",
        "fit_cv",
    ),
];

/// The options of `crf_fit` and `crf_fit_rows` (and `CRFTagger`).
pub const CRF_OPTIONS: &[Spec] = &[
    spec("l2", Float, Null, "L2 strength lambda (> 0; default 1 / number of sequences)", "all"),
    spec("tol", Float, Value::Float(1e-6), "stop when the duality gap <= tol * primal", "all"),
    spec("max_epochs", Int, Value::Int(100), "epoch cap (sequence updates per sequence)", "all"),
    spec(
        "check_every",
        Int,
        Value::Int(1),
        "true-gap check period in epochs (0: on the running estimate only)",
        "all",
    ),
    spec("sampling", Choice(CrfSampling::NAMES), Text("gap"), "choice of the next sequence", "all"),
    spec(
        "non_uniform",
        Float,
        Value::Float(0.8),
        "share of gap-proportional draws, in [0, 1]",
        "sampling: gap",
    ),
    spec(
        "seed",
        Int,
        Value::Int(0),
        "random seed: the same seed (and thread count) gives the same model",
        "all",
    ),
    spec("max_memory", Int, Null, "bytes the solver may allocate per fit", "all"),
    spec("max_seconds", Float, Null, "time budget in seconds (the model then says converged=false)", "all"),
    spec("max_sequence_length", Int, Null, "refuse sequences longer than this", "all"),
    spec(
        "n_threads",
        Int,
        Null,
        "threads computing oracles (default: every core for a lone fit, 1 inside parallel groups)",
        "all",
    ),
    spec("n_features", Int, Null, "sparse width (default: largest index + 1)", "sparse features"),
    spec("null_policy", Choice(CRF_NULL_POLICIES), Text("raise"), "rows with nulls raise", "all"),
    spec(
        "on_error",
        Choice(ON_ERROR),
        Text("raise"),
        "a failed group raises, or yields a null model with its status",
        "all",
    ),
];

/// Whether two names are equal (usable in constant evaluation).
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The default of option `name` of `table`. Evaluated at compile time by the `Default`
/// impls, so an unknown name fails the build, not a fit.
pub(crate) const fn default_of(table: &[Spec], name: &str) -> Value {
    let mut i = 0;
    while i < table.len() {
        if same(table[i].name, name) {
            return table[i].default;
        }
        i += 1;
    }
    panic!("no such option in the schema")
}

/// [`default_of`] for a [`Value::Float`] option.
pub(crate) const fn float(table: &[Spec], name: &str) -> f64 {
    match default_of(table, name) {
        Value::Float(v) => v,
        _ => panic!("the option's default is not a float"),
    }
}

/// [`default_of`] for a [`Value::Int`] option.
pub(crate) const fn int(table: &[Spec], name: &str) -> i64 {
    match default_of(table, name) {
        Value::Int(v) => v,
        _ => panic!("the option's default is not an integer"),
    }
}

/// [`default_of`] for a [`Value::Bool`] option.
pub(crate) const fn boolean(table: &[Spec], name: &str) -> bool {
    match default_of(table, name) {
        Value::Bool(v) => v,
        _ => panic!("the option's default is not a bool"),
    }
}

/// [`default_of`] for a [`Value::Text`] option.
pub(crate) const fn text(table: &[Spec], name: &str) -> &'static str {
    match default_of(table, name) {
        Value::Text(v) => v,
        _ => panic!("the option's default is not a name"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FitParams;
    use crate::crf::CrfParams;

    /// Every option is listed once, every choice default is one of its choices, and only
    /// optional kinds default to `Null` or take none.
    #[test]
    fn tables_are_consistent() {
        for table in [FIT_OPTIONS, CRF_OPTIONS, PATH_OPTIONS, CV_OPTIONS] {
            for (k, s) in table.iter().enumerate() {
                assert!(table[k + 1..].iter().all(|t| t.name != s.name), "{} twice", s.name);
                assert!(!s.help.is_empty() && !s.applies.is_empty(), "{}", s.name);
                match (s.kind, s.default) {
                    (Choice(names), Text(d)) => assert!(names.contains(&d), "{}: {d}", s.name),
                    (Kind::Float, Value::Float(_) | Null)
                    | (Int, Value::Int(_) | Null)
                    | (Bool, Value::Bool(_))
                    | (IntList | Column | Model, Null) => {}
                    other => panic!("{}: kind and default disagree: {other:?}", s.name),
                }
            }
        }
    }

    /// Every schema default checks, and the parameter structs take the schema's defaults (they
    /// are read from here; this pins the reading).
    #[test]
    fn defaults_are_valid_and_used() {
        let p = FitParams::default();
        p.check().unwrap();
        assert_eq!(p.loss, text(FIT_OPTIONS, "loss"));
        assert_eq!((p.l2, p.tol, p.max_epochs), (float(FIT_OPTIONS, "l2"), float(FIT_OPTIONS, "tol"), 500));
        let c = CrfParams::default();
        c.check().unwrap();
        assert_eq!(
            (c.sampling.as_str(), c.max_epochs),
            (text(CRF_OPTIONS, "sampling"), int(CRF_OPTIONS, "max_epochs"))
        );
    }
}
