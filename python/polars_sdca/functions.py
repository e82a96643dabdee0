"""The functional API: each function returns a Polars expression backed by the plugin.

Values are passed through to the plugin unchanged, after two conversions Python must do
itself: column names become expressions, and numpy scalars become Python numbers (they do not
survive pickling into Rust). The values themselves are checked by the Rust core's single
validator, called here once when the expression is built, so a bad ``l2`` or an unknown
``loss`` raises ``ValueError`` before any data is read.
"""

from __future__ import annotations

import numbers
import pickle
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from polars.plugins import register_plugin_function

from polars_sdca import _internal

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from polars_sdca._typing import (
        CrfOptions,
        CrfPredictKind,
        CvOptions,
        FitOptions,
        GroupsKind,
        IntoExpr,
        IntoFeatures,
        PathOptions,
        PredictKind,
    )

_LIB = Path(__file__).parent

_FIT_OPTIONS: dict[str, dict[str, Any]] = {o["name"]: o for o in _internal.fit_options()}
"""The linear fits' options, from the Rust core's schema (names, kinds, defaults, choices, help)."""
_CRF_OPTIONS: dict[str, dict[str, Any]] = {o["name"]: o for o in _internal.crf_options()}
"""The CRF fits' options, from the same schema."""
_PATH_OPTIONS: dict[str, dict[str, Any]] = {o["name"]: o for o in _internal.path_options()}
"""The grid options of :func:`fit_path` and :func:`fit_cv`, from the same schema."""
_CV_OPTIONS: dict[str, dict[str, Any]] = {o["name"]: o for o in _internal.cv_options()}
"""The cross-validation options of :func:`fit_cv`, from the same schema."""


def _expr(value: IntoExpr, what: str) -> pl.Expr:
    if isinstance(value, pl.Expr):
        return value
    if isinstance(value, str):
        return pl.col(value)
    msg = f"{what} must be a column name or a polars expression, got {type(value).__name__}"
    raise TypeError(msg)


def _name(expr: pl.Expr) -> str:
    """The output name of an expression, for error messages (its text when undetermined)."""
    try:
        return expr.meta.output_name()
    except Exception:  # an expression without a single root name
        return str(expr)


def _feature_exprs(features: IntoFeatures) -> list[pl.Expr]:
    if isinstance(features, (str, pl.Expr)):
        return [_expr(features, "features")]
    if isinstance(features, Sequence):
        exprs = [_expr(f, "each feature") for f in features]
        if not exprs:
            msg = "features is empty; pass at least one column"
            raise ValueError(msg)
        return exprs
    msg = f"features must be a column name, an expression or a list of them, got {type(features).__name__}"
    raise TypeError(msg)


def _number(name: str, value: object, kind: type) -> float | int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        msg = f"{name} must be a number, got {type(value).__name__} {value!r}"
        raise TypeError(msg)
    if kind is int:
        if not isinstance(value, numbers.Integral):
            msg = f"{name} must be an integer, got {value!r}"
            raise TypeError(msg)
        return int(value)
    return float(value)


def _groups(value: object) -> list[int] | None:
    """``groups`` as a list of Python ints (numpy arrays and integer scalars included)."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        msg = f"groups must be a sequence of integer group ids (one per feature), got {type(value).__name__}"
        raise TypeError(msg)
    ids = list(value)
    bad = [g for g in ids if isinstance(g, bool) or not isinstance(g, numbers.Integral)]
    if bad:
        msg = f"groups must hold integer group ids, got {bad[0]!r}"
        raise TypeError(msg)
    return [int(g) for g in ids]


def _options(options: dict[str, Any], schema: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The options over the schema's defaults, each converted by its kind (numpy scalars to
    Python numbers, which pickle into Rust) and type-checked; an unknown name is a TypeError
    listing the valid ones. Values are range-checked by the Rust validator (:func:`_pack`).
    Column and model options are returned as given."""
    unknown = set(options) - set(schema)
    if unknown:
        msg = f"unknown option(s) {sorted(unknown)}; valid options are {sorted(schema)}"
        raise TypeError(msg)
    out: dict[str, Any] = {}
    for name, spec in schema.items():
        value = options.get(name, spec["default"])
        kind = spec["kind"]
        if (value is None and spec["default"] is None) or kind in ("column", "model"):
            out[name] = value
        elif kind in ("float", "int"):
            out[name] = _number(name, value, float if kind == "float" else int)
        elif kind == "bool":
            if not isinstance(value, bool):
                msg = f"{name} must be a bool, got {type(value).__name__}"
                raise TypeError(msg)
            out[name] = value
        elif kind == "choice":
            out[name] = _string(name, value)
        else:  # int_list
            out[name] = _groups(value)
    return out


def _string(name: str, value: object) -> str:
    if not isinstance(value, str):
        msg = f"{name} must be a string, got {type(value).__name__}"
        raise TypeError(msg)
    return value


def _pack(
    layout: dict[str, Any],
    params: dict[str, Any],
    check: Callable[[bytes], None],
    extra: dict[str, Any] | None = None,
) -> bytes:
    """A fit's kwargs as the plugin reads them, checked by the Rust validator.

    The payload nests the solver parameters under ``params`` (read straight into the core's
    parameter struct) next to the input ``layout`` and ``on_error``; ``extra`` adds the grid
    (``path``) and cross-validation (``cv``) of :func:`fit_path` and :func:`fit_cv`.
    """
    payload = {"layout": layout, "on_error": params.pop("on_error"), "params": params, **(extra or {})}
    packed = pickle.dumps(payload, protocol=5)
    check(packed)
    return packed


def _register(
    function_name: str,
    args: list[pl.Expr],
    layout: dict[str, Any],
    params: dict[str, Any],
    check: Callable[[bytes], None],
) -> pl.Expr:
    """Check a fit's kwargs, then register the plugin call. Fits (not the ``_rows`` variants)
    are aggregations: ``returns_scalar``."""
    packed = _pack(layout, params, check)
    return register_plugin_function(
        plugin_path=_LIB,
        function_name=function_name,
        args=args,
        # One bytes value: the plugin decodes the payload once per thread, not once per group.
        kwargs={"packed": packed},
        returns_scalar=not function_name.endswith("_rows"),
    )


def _fit_call(
    function_name: str, label: IntoExpr, features: IntoFeatures, options: dict[str, Any]
) -> pl.Expr:
    args, layout, kwargs = _fit_inputs(label, features, options)
    return _register(function_name, args, layout, kwargs, _internal.check_fit_kwargs)


def _fit_inputs(
    label: IntoExpr, features: IntoFeatures, options: dict[str, Any]
) -> tuple[list[pl.Expr], dict[str, Any], dict[str, Any]]:
    """A fit's input expressions (label, features..., weights, warm start), their layout and
    the solver parameters, converted and type-checked (values are checked by :func:`_pack`)."""
    kwargs = _options(options, _FIT_OPTIONS)
    feature_exprs = _feature_exprs(features)
    args = [_expr(label, "label"), *feature_exprs]
    weights = kwargs.pop("weights")
    if weights is not None:
        args.append(_expr(weights, "weights"))
    warm_start = kwargs.pop("warm_start")
    if warm_start is not None:
        args.append(_model_expr(warm_start))
    layout = {
        "n_feature_inputs": len(feature_exprs),
        "has_weights": weights is not None,
        "n_features": kwargs.pop("n_features"),
        "null_policy": kwargs.pop("null_policy"),
        "has_warm_start": warm_start is not None,
        "names": [_name(a) for a in args],
    }
    return args, layout, kwargs


def fit(label: IntoExpr, features: IntoFeatures, **options: Unpack[FitOptions]) -> pl.Expr:
    """Fit a regularized linear model; one model struct per group.

    Minimises ``(1/n) sum_i s_i phi(x_i.w + b, y_i) + (l2/2)||w||^2 + l1 ||w||_1`` by
    stochastic dual coordinate ascent and returns the model with its duality-gap certificate.

    Parameters
    ----------
    label
        Label column: ``{-1, +1}``, ``{0, 1}`` or booleans for binary losses, numbers for
        regression losses, any integer, string or boolean classes for multiclass losses.
    features
        A list of numeric columns (dense), one ``List(Float64)`` / ``Array(Float64, d)``
        column (dense vectors), or one ``List(Struct{index, value})`` column (sparse).
    **options
        loss : str
            The loss ``phi``: "logistic" (default), "hinge", "smooth_hinge",
            "squared_hinge", "squared", "absolute", "epsilon_insensitive" or "quantile"
            (pinball: ``q (y - a)_+ + (1 - q) (a - y)_+``); for ``k``
            classes "multinomial" (softmax cross-entropy), "multiclass_hinge"
            (Crammer-Singer) or "multiclass_smooth_hinge". A multiclass model has one
            ``coef`` list and one intercept per class (``classes`` order, sorted).
        l2 : float
            L2 strength, ``> 0`` (default 1e-4), or ``0`` with ``l1 > 0``. scikit-learn's
            ``C`` is ``1 / (l2 n)``.
        l1 : float
            L1 strength, ``>= 0`` (default 0): elastic net by Prox-SDCA. With ``groups``,
            the weight of the group penalty instead.
        smoothing, epsilon, quantile : float
            Parameters of "smooth_hinge" and "multiclass_smooth_hinge" (default 1),
            "epsilon_insensitive" (default 0.1) and "quantile" (the level, in (0, 1);
            default 0.5).
        solver : {"auto", "sdca", "accelerated", "pdprox", "newton", "cd"}
            Solver (default "auto": "newton" for a ridge problem (``l1 = 0``, ``l2 > 0``)
            with at most 31 features and loss "logistic", "squared", "squared_hinge",
            "smooth_hinge" or "multinomial", unless ``sampling="gap"``; "cd" for the losses
            "squared", "logistic", "squared_hinge" and "smooth_hinge" with ``l1 > 0`` when
            ``l2 = 0`` (the Lasso, L1-logistic) or there are at least as many features as rows,
            and for "squared" also when ``R^2 / l2 > 10 n`` (with ``l2 > 0``, a single fit
            hands over to Prox-SDCA when "cd" has not converged within the work of Prox-SDCA's
            predicted epochs, and reports "sdca"); else accelerated Prox-SDCA when
            ``R^2 / (gamma l2) > 10 n`` for a ``1/gamma``-smooth loss, plain (Prox-)SDCA
            otherwise). The model's ``solver`` field says which ran. "newton" is damped
            Newton on the primal for those losses and ridge problems (at most 512
            features): a few passes of ``O(n d^2)`` each, with the same certified gap;
            ``epochs`` counts its passes, ``gap_trace`` has one entry per iterate. For
            "multinomial" it is Newton-CG (no feature limit): each iteration's passes are a
            gradient, a block preconditioner and Hessian-vector products; the duals are the
            softmax probabilities matched to the model.
            "cd" is cyclic coordinate descent on the primal over working sets (``l2 = 0``
            allowed, solved as it is) with dynamic Gap Safe screening; for the other smooth
            losses each outer step is a proximal Newton step (newGLMNET: a weighted Lasso
            solved by coordinate descent, then a line search). The model's duals are matched
            to its scores, the gap is certified the same way.
            "pdprox" is the primal-dual prox method for a
            non-smooth loss with a non-smooth penalty (losses "hinge", "absolute",
            "epsilon_insensitive", "quantile"; ``l2 = 0`` allowed; group penalties); each
            epoch is one full pass, and ``gap`` is a certified bound. The intercept is
            treated as by SDCA (``l2`` only, so unpenalised when ``l2 = 0``).
        groups : sequence of int, optional
            "pdprox" only: a group id per feature. Replaces ``l1 ||w||_1`` by ``l1`` times
            the group penalty of ``group_norm``.
        group_norm : {"l2", "linf"}
            "pdprox" only: "l2" (default) is the group lasso ``sum_g sqrt(d_g) ||w_g||_2``
            (``d_g`` the group's size); "linf" is the L1-inf penalty
            ``sum_g max_j |w_gj|`` (unweighted).
        output : {"last", "average"}
            "pdprox" only: return the last iterate (default; exactly sparse) or the running
            average (the iterate of the O(1/T) bound; dense).
        pdprox_variant : {"dual", "primal"}
            "pdprox" only: Pdprox-dual (Algorithm 3 of the paper, default) or
            Pdprox-primal (Algorithm 2).
        sampling : {"permutation", "uniform", "gap"}
            Coordinate order: a fresh permutation per epoch (from 32,768 rows on, by
            buckets of 32 consecutive rows in random order, each shuffled: the passes read
            memory nearby and cost 20-30% less on 200,000 sparse rows), draws with replacement, or
            draws proportional to the rows' duality gaps (80%, the rest uniform; each row's
            gap is stored at its visits and at every gap check), which pays when few rows
            carry most of the gap (hinge-type losses).
        tol : float
            Stop when the duality gap ``<= tol * primal`` (default 1e-6).
        max_epochs, check_every : int
            Epoch cap (default 500) and gap-check period in epochs (default 1).
        seed : int
            Random seed; the same seed gives the same model.
        fit_intercept : bool
            Fit an intercept as a constant feature of value ``intercept_scaling``,
            regularized by ``l2`` (liblinear's treatment); default True.
        shrinking : bool
            liblinear's shrinking for the box-constrained duals of hinge, absolute,
            epsilon_insensitive and quantile (plain SDCA, permutation sampling): passes skip
            rows settled at a bound and the gap is certified over all rows when the kept
            rows look solved (then ``check_every`` is not used); default True. Hinge on the
            sparse CoNLL tokens: 0.19 s instead of 2.6 s to a gap of 1e-6.
        weights : str or Expr, optional
            Sample-weight column (``s_i >= 0``).
        warm_start : model, optional
            Start from a fitted model (a model column, dict or one-row DataFrame, as for
            :func:`predict`): the duals start at ``-phi'(score)`` of its scores. Speeds up a
            path over decreasing ``l1`` / ``l2``; the width must match.
        n_features : int, optional
            Width of sparse features (default: largest index + 1 in the group).
        max_seconds : float, optional
            Time budget; the fit stops after the epoch that exceeds it, not converged.
        max_memory : int, optional
            Bytes the solver may allocate per fit (duals, row norms and model arrays, about
            ``16 n k + 24 n + 56 (d + 1) k`` for ``n`` rows, ``d`` features and ``k`` scores
            per row); a larger fit fails before it starts, naming both numbers. The input
            columns are not counted.
        null_policy : {"raise", "drop"}
            Rows with nulls raise (default) or are dropped.
        on_error : {"raise", "null"}
            A group that cannot be fitted raises (default) or yields a null model whose
            ``status`` says why.

    Returns
    -------
    Expr
        A Struct with ``coef``, ``intercept``, ``classes``, ``loss``, ``l2``, ``l1``,
        ``l2_used``, ``solver``, ``primal``, ``dual``, ``gap``, ``solved_gap``, ``epochs``,
        ``converged``, ``gap_trace``, ``n_rows``, ``n_features`` and ``status``.
        ``l2_used`` and ``solved_gap`` are the L2 weight and certified gap of the problem
        actually solved; they differ from ``l2`` and ``gap`` only for the Lasso (``l2=0``),
        which is solved as an elastic net with the small ``l2_used`` chosen from ``tol``
        (``gap`` then bounds the original problem's suboptimality).

    Raises
    ------
    ValueError
        An option value is out of range or unknown (raised here, before data is read).
    TypeError
        An option has the wrong type.
    polars.exceptions.ComputeError
        Bad data (nulls, NaN, bad labels or indices, empty group), naming the column and row.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_sdca as ps
    >>> df = pl.DataFrame({"x": [-2.0, -1.0, 1.0, 2.0], "y": [-1, -1, 1, 1]})
    >>> m = df.select(ps.fit("y", ["x"], loss="squared", l2=0.1, tol=1e-12)).item()
    >>> round(m["coef"][0], 4), m["converged"]
    (0.5769, True)

    Median regression with an L1 penalty and no L2, by the primal-dual prox solver:

    >>> df = pl.DataFrame({"a": [0.0, 1.0, 2.0, 3.0, 4.0], "b": [1.0, 0.0, 1.0, 0.0, 1.0]})
    >>> df = df.with_columns(y=2 * pl.col("a") + 1)
    >>> m = df.select(
    ...     ps.fit("y", ["a", "b"], loss="quantile", l2=0.0, l1=1e-3, solver="pdprox", max_epochs=20_000)
    ... ).item()
    >>> round(m["coef"][0], 2), abs(m["coef"][1]) < 1e-3, round(m["intercept"], 2), m["converged"]
    (2.0, True, 1.0, True)
    """
    args, layout, kwargs = _fit_inputs(label, features, dict(options))
    packed = _pack(layout, kwargs, _internal.check_fit_kwargs)
    # Two calls: `fit_packed` fits a group and returns its model as one compact row (in a
    # `group_by().agg` Polars imports, keeps and concatenates every group's row, which for
    # the 18-field model struct cost more than the fit), then `unpack_models` builds the
    # model structs of all groups in one elementwise call.
    rows = register_plugin_function(
        plugin_path=_LIB,
        function_name="fit_packed",
        args=args,
        kwargs={"packed": packed},
        returns_scalar=True,
    )
    return register_plugin_function(
        plugin_path=_LIB,
        function_name="unpack_models",
        args=[rows],
        kwargs={"packed": packed},
        is_elementwise=True,
    )


def fit_groups(
    label: IntoExpr,
    features: IntoFeatures,
    *,
    by: IntoExpr | Sequence[IntoExpr],
    kind: GroupsKind = "model",
    **options: Unpack[CvOptions],
) -> pl.Expr:
    """One model per group of ``by`` from a single plugin call (many small groups, fast).

    The same models as ``df.group_by(by).agg(fit(label, features, **options))``, bit for bit,
    without the per-group call: Polars passes the whole columns once and the plugin fits the
    groups in parallel on its own thread pool. Pays for many small groups, where the fixed cost
    of a plugin call (importing every input column, exporting the model struct) outweighs the
    fit; use it in ``select`` (it changes the number of rows), then ``unnest``.

    Parameters
    ----------
    label, features, **options
        As for :func:`fit`.
    by
        Group key column(s) or expression(s); rows with equal keys (nulls included) share a
        model.
    kind : {"model", "path", "cv"}
        What each group gets: the model of :func:`fit` (default), the list of models of
        :func:`fit_path`, or the struct of :func:`fit_cv` (whose options then apply; a list
        of ``l1_ratio`` values is cross-validated per group as by :func:`fit_cv`).

    Returns
    -------
    pl.Expr
        A struct column named after the label with one row per group, sorted by key: the key
        fields, then the model struct (named after the label). ``unnest`` gives the frame of
        ``group_by(by).agg(...)``. With ``on_error="raise"`` a failing group's error names its
        first key.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_sdca as ps
    >>> df = pl.DataFrame(
    ...     {
    ...         "g": [1, 1, 1, 1, 2, 2, 2, 2],
    ...         "y": [0, 1, 0, 1, 1, 0, 1, 0],
    ...         "x": [-1.0, 1.0, -2.0, 2.0, 1.0, -1.0, 3.0, -3.0],
    ...     }
    ... )
    >>> out = df.select(ps.fit_groups("y", "x", by="g", l2=0.1)).unnest("y")
    >>> out.select("g", pl.col("y").struct.field("converged")).rows()
    [(1, True), (2, True)]
    """
    if kind not in ("model", "path", "cv"):
        msg = f"invalid parameter `kind`: unknown value {kind!r}; expected one of model, path, cv"
        raise ValueError(msg)
    extra = None
    if kind == "model":
        args, layout, kwargs = _fit_inputs(label, features, dict(options))
    else:
        args, layout, kwargs, extra = _path_inputs(label, features, dict(options), cv=kind == "cv")
    keys = [_expr(b, "by") for b in ([by] if isinstance(by, (str, pl.Expr)) else list(by))]
    if not keys:
        msg = "by is empty; pass at least one key column"
        raise ValueError(msg)
    group_id = pl.struct(keys).rank("dense").alias("__sdca_group")
    # Inside group_by().agg the inputs arrive unnamed: the keys' names label the output fields.
    layout["names"] = [*layout["names"], _name(group_id), *(_name(k) for k in keys)]
    check = _internal.check_fit_kwargs if extra is None else _internal.check_path_kwargs
    packed = _pack(layout, kwargs, check, extra)
    return register_plugin_function(
        plugin_path=_LIB,
        function_name={"model": "fit_groups", "path": "fit_path_groups", "cv": "fit_cv_groups"}[kind],
        args=[*args, group_id, *keys],
        kwargs={"packed": packed},
        changes_length=True,
    )


def _ratios(value: object) -> list[float] | None:
    """``l1_ratio`` as the list the plugin reads: one number, or a sequence of numbers (a
    tuple or numpy array too), each becoming a Python float; the values are range-checked by
    the Rust validator."""
    if value is None:
        return None
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        ratios = [_number("each l1_ratio", v, float) for v in value]
        if not ratios:
            msg = "l1_ratio is empty; pass a number in (0, 1] or a list of them, or no l1_ratio"
            raise ValueError(msg)
        return ratios
    return [_number("l1_ratio", value, float)]


def _grid(options: dict[str, Any]) -> dict[str, Any]:
    """Takes a path's grid out of its options: ``l1`` / ``l2`` given as sequences of numbers
    (numpy arrays included), ``l1_ratio`` as a list, and the schema's other grid options
    (:data:`_PATH_OPTIONS`)."""
    ratios = _ratios(options.pop("l1_ratio", None))
    grid = _options({k: options.pop(k) for k in list(options) if k in _PATH_OPTIONS}, _PATH_OPTIONS)
    grid["l1_ratio"] = ratios
    if ratios is not None and "l2" in options:
        msg = "l1_ratio ties l2 to l1 (l2 = l1 (1 - l1_ratio) / l1_ratio); drop l2 or l1_ratio"
        raise ValueError(msg)
    for name in ("l1", "l2"):
        value = options.get(name)
        is_list = isinstance(value, Iterable) and not isinstance(value, (str, bytes))
        grid[name] = [_number(name, v, float) for v in options.pop(name)] if is_list else None
    return grid


def _path_inputs(
    label: IntoExpr, features: IntoFeatures, options: dict[str, Any], *, cv: bool
) -> tuple[list[pl.Expr], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A path's (or cross-validation's) inputs, layout, fit parameters and the extra payload
    (``path``, and ``cv`` with the fold column as the last input)."""
    options = dict(options)
    folds = None
    extra: dict[str, Any] = {}
    if cv:
        cv_options = _options({k: options.pop(k) for k in list(options) if k in _CV_OPTIONS}, _CV_OPTIONS)
        folds = cv_options.pop("fold_column")
        extra["cv"] = {**cv_options, "fold_column": folds is not None}
    extra["path"] = _grid(options)
    args, layout, kwargs = _fit_inputs(label, features, options)
    layout["has_folds"] = folds is not None
    if folds is not None:
        fold_expr = _expr(folds, "fold_column")
        # Dense ranks: any dtype works as fold ids (nulls stay null and are refused).
        args.append(fold_expr.rank("dense"))
        layout["names"] = [*layout["names"], _name(fold_expr)]
    return args, layout, kwargs, extra


def _path_call(
    function_name: str, label: IntoExpr, features: IntoFeatures, options: dict[str, Any]
) -> pl.Expr:
    args, layout, kwargs, extra = _path_inputs(label, features, options, cv=function_name == "fit_cv")
    packed = _pack(layout, kwargs, _internal.check_path_kwargs, extra)
    return register_plugin_function(
        plugin_path=_LIB,
        function_name=function_name,
        args=args,
        kwargs={"packed": packed},
        returns_scalar=True,
    )


def fit_path(label: IntoExpr, features: IntoFeatures, **options: Unpack[PathOptions]) -> pl.Expr:
    """Fit a regularization path: one certified model per penalty value, per group.

    The values run in decreasing order and each fit starts from the previous model (a warm
    start). An ``l1`` path (the default) starts at ``l1_max``, the exact smallest ``l1`` whose
    model is zero, computed from the group's data with the intercept handled (at ``w = 0`` the
    duals are ``-phi'`` at the intercept-only optimum, and ``l1_max = ||(1/n) sum_i s_i alpha_i
    x_i||_inf``); models at ``l1 >= l1_max`` are that closed form (``solver="closed_form"``).
    For a non-smooth loss whose intercept-only optimum sits on a kink (the absolute loss at the
    median) the value returned is one for which the zero model is certified optimal, which may
    be somewhat above the smallest. A ridge-type path runs over ``l2`` instead.

    Parameters
    ----------
    label, features
        As for :func:`fit`.
    **options
        The options of :func:`fit` (except ``warm_start``), and the grid:

        l1 : float or sequence of float
            A list runs the path over these ``l1`` values (sorted decreasing); a number is
            the fixed ``l1`` of an ``l2`` path.
        l2 : float or sequence of float
            A list runs a ridge-type path over these ``l2`` values; a number is the fixed
            ``l2`` of an ``l1`` path (``0``: the Lasso).
        n_l1 : int
            Number of ``l1`` values from ``l1_max`` down (default 100), when ``l1`` is not a
            list.
        l1_min_ratio : float
            The smallest computed ``l1`` over ``l1_max`` (default 1e-3).
        n_l2 : int, optional
            Set it (with ``l2`` not a list) for a computed ridge path: ``n_l2`` values from
            ``1e4 / n`` (scikit-learn's ``C = 1e-4``) down.
        l2_min_ratio : float
            The smallest computed ``l2`` over the largest (default 1e-8: ``C`` up to 1e4).
        l1_ratio : float, optional
            scikit-learn's ``ElasticNet`` mixing, in ``(0, 1]``: the ``l1`` path ties
            ``l2 = l1 (1 - l1_ratio) / l1_ratio`` (scikit-learn's ``alpha = l1 / l1_ratio``;
            ``1``: the Lasso), instead of a fixed ``l2``; the grid's top is then the exact
            fixed point ``l1 = l1_max(l2(l1))``. Not with ``l2``. A path takes one value;
            :func:`fit_cv` takes a list (one path per value).
        screening : bool
            Sequential Gap Safe screening (default True; Fercoq, Gramfort and Salmon, ICML
            2015; Ndiaye et al., JMLR 2017): for ``l1 > 0`` with the squared, logistic, smooth
            hinge or squared hinge loss, the features the previous model proves zero at the
            next value's optimum leave that fit's passes. The models and certificates are the
            full problem's.

    Returns
    -------
    Expr
        A ``List`` of model structs, one per value, decreasing: the fields of :func:`fit`
        (each model's ``l1`` / ``l2`` is its value), plus ``screened`` (UInt64, the features
        Gap Safe screening left out of that value's passes; all of them for the closed-form
        zero model) and ``nnz_visited`` (UInt64, the stored matrix entries its passes read,
        the screening test's and the full certificate's passes included); both null in a
        failed group's model. Pick one with ``.list.get(i)`` (or
        ``.list.last()``) and pass it to :func:`predict`.

    Raises
    ------
    ValueError
        An option or grid value is out of range (raised here, before data is read).
    TypeError
        An option has the wrong type.
    polars.exceptions.ComputeError
        Bad data, naming the column and row.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_sdca as ps
    >>> df = pl.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "b": [1.0, 0.0, 1.0, 0.0]})
    >>> df = df.with_columns(y=2 * pl.col("a") + 1)
    >>> path = df.select(ps.fit_path("y", ["a", "b"], loss="squared", l2=0.0, n_l1=3)).item()
    >>> [m["coef"] for m in path][0], [round(m["l1"], 4) for m in path]
    ([0.0, 0.0], [2.5, 0.0791, 0.0025])
    >>> df.select(ps.predict(path[-1], ["a", "b"]).round(2)).to_series().to_list()
    [1.0, 3.0, 5.0, 7.0]
    """
    return _path_call("fit_path", label, features, dict(options))


def fit_cv(label: IntoExpr, features: IntoFeatures, **options: Unpack[CvOptions]) -> pl.Expr:
    """Cross-validate a regularization path per group and refit at the chosen value.

    K-fold cross-validation in one call: the grid is computed on the group's rows as by
    :func:`fit_path`, each fold fits the path on its training rows (folds run in parallel when
    the call is alone, in ``select``), every model is scored on the fold's held-out rows, the
    value with the best mean score (or, with ``select="one_standard_error"``, the largest
    penalty within one standard error of it) is chosen, and the model is refit on all rows.

    With a list of ``l1_ratio`` values (scikit-learn's ``ElasticNetCV(l1_ratio=[...])``) the
    pair ``(l1_ratio, l1)`` is searched: each ratio runs its own warm-started path, over its
    own grid (from its own exact ``l1_max`` when computed; a given ``l1`` list is shared), on
    the same folds, and the choice runs over every pair.

    Parameters
    ----------
    label, features
        As for :func:`fit`.
    **options
        The options of :func:`fit_path`, and:

        l1_ratio : float or sequence of float, optional
            One mixing in ``(0, 1]`` (``l2 = l1 (1 - l1_ratio) / l1_ratio`` along the path, as
            for :func:`fit_path`), or a list of them (a tuple or numpy array too): one path per
            value, in the order given, the same folds for all. scikit-learn's ``alpha`` of a
            pair is ``l1 / l1_ratio``.
        folds : int
            Number of folds (default 5), drawn from ``seed``: stratified by class for
            classification losses, else shuffled.
        fold_column : str or Expr, optional
            Each row's fold (any dtype; each distinct value is a fold) instead of drawn folds.
        scoring : {"auto", "log_loss", "accuracy", "squared_error", "absolute_error", "hinge"}
            The held-out score, a weighted mean over the fold's rows (default "auto":
            "log_loss" for logistic and multinomial, "accuracy" for the other classifiers,
            "squared_error" for regression).
        select : {"best", "one_standard_error"}
            The best mean score (default; on ties the first ratio given, then the largest
            penalty), or the one-standard-error rule: of the pairs whose mean is within one
            standard error of the best, the one nearest its path's top (the largest penalty of
            its path; with given ``l1`` values, the largest ``l1``), the better mean among
            pairs at the same position.

    Returns
    -------
    Expr
        A struct: ``model`` (the refit model at the chosen pair, fields of :func:`fit`; its
        ``l1`` and ``l2`` are the pair's), ``penalty`` ("l1" or "l2"), then one entry per
        (ratio, value) pair, the paths one after the other in the order given, each
        decreasing: ``l1_ratio`` (the pair's ratio; null without ``l1_ratio``), ``values``
        (the pair's penalty value), ``mean`` and ``se`` (the mean held-out score over the
        folds and its standard error); ``fold_scores`` (one list per fold, entries as in
        ``values``); ``best`` and ``chosen`` (the value of the best mean and the value refit),
        ``best_l1_ratio`` and ``chosen_l1_ratio`` (their ratios; null without ``l1_ratio``),
        and ``scoring``. ``explode`` of ``l1_ratio``, ``values``, ``mean`` and ``se`` gives
        one row per pair: one curve per ratio to plot.

    Raises
    ------
    ValueError
        An option is out of range (an ``l1_ratio`` outside ``(0, 1]``, NaN, or an empty
        list), or a scoring does not fit the loss (``log_loss`` needs logistic or
        multinomial).
    TypeError
        An option has the wrong type (an ``l1_ratio`` that is not a number or a sequence of
        numbers).
    polars.exceptions.ComputeError
        Bad data, or a fold whose training rows hold a single class.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_sdca as ps
    >>> df = pl.DataFrame({"x": [float(i % 7) - 3 for i in range(40)], "y": [i % 7 > 3 for i in range(40)]})
    >>> cv = df.select(ps.fit_cv("y", ["x"], l2=1e-3, n_l1=5, folds=4, scoring="accuracy")).item()
    >>> cv["penalty"], len(cv["mean"]), cv["chosen"] in cv["values"], cv["model"]["converged"]
    ('l1', 5, True, True)

    Several elastic-net mixings, one curve each (``ElasticNetCV(l1_ratio=[0.2, 1.0])``):

    >>> df = pl.DataFrame({"a": [float(i % 5) for i in range(30)], "b": [float(i % 3) for i in range(30)]})
    >>> df = df.with_columns(y=2 * pl.col("a") - pl.col("b") + 0.1 * (pl.int_range(30) % 2))
    >>> out = df.select(ps.fit_cv("y", ["a", "b"], loss="squared", l1_ratio=[0.2, 1.0], n_l1=4, folds=3))
    >>> curves = out.unnest("y").select("l1_ratio", "values", "mean", "se").explode(pl.all())
    >>> curves.group_by("l1_ratio", maintain_order=True).len().rows()
    [(0.2, 4), (1.0, 4)]
    >>> cv = out.item()
    >>> cv["chosen_l1_ratio"] in (0.2, 1.0), cv["model"]["l1"] == cv["chosen"]
    (True, True)
    """
    return _path_call("fit_cv", label, features, dict(options))


def fit_rows(label: IntoExpr, features: IntoFeatures, **options: Unpack[FitOptions]) -> pl.Expr:
    """Fit like :func:`fit` and return per-row outputs of the group's model.

    Parameters
    ----------
    label, features, **options
        As for :func:`fit`.

    Returns
    -------
    Expr
        A Struct per input row: ``prediction`` (the label dtype for classification, else
        Float64), ``decision`` (``x.w + b``), ``dual`` (``alpha_i``), ``gap`` (the row's
        weighted Fenchel-Young gap; with ``solver="sdca"`` their mean is the model's
        ``solved_gap``, which is its ``gap`` unless ``l2=0``; ``"accelerated"`` rows hold the
        gaps of its last inner problem, and its model ``gap`` is the tighter bound of its
        stopping rules) and ``loss`` (the row's weighted loss ``s_i phi(x_i.w + b, y_i)``).
        For multiclass losses
        ``decision`` and ``dual`` are ``List(Float64)`` with one entry per class. Rows
        dropped by ``null_policy="drop"`` give nulls.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_sdca as ps
    >>> df = pl.DataFrame({"x": [-2.0, -1.0, 1.0, 2.0], "y": [0, 0, 1, 1]})
    >>> out = df.select(ps.fit_rows("y", ["x"], loss="hinge", l2=0.1).alias("r")).unnest("r")
    >>> out["prediction"].to_list()
    [0, 0, 1, 1]
    """
    return _fit_call("fit_rows", label, features, dict(options))


def _model_expr(model: IntoExpr | dict[str, Any] | pl.DataFrame | pl.Series) -> pl.Expr:
    if isinstance(model, (str, pl.Expr)):
        return _expr(model, "model")
    if isinstance(model, dict):
        # A regression model's `classes` is None, which alone would infer a Null column.
        overrides = {"classes": pl.List(pl.Float64)} if model.get("classes") is None else {}
        model = pl.DataFrame([model], schema_overrides=overrides)
    if isinstance(model, pl.DataFrame):
        if model.height != 1:
            msg = f"a model DataFrame must have exactly one row, got {model.height}"
            raise ValueError(msg)
        structs = [c for c in model.columns if isinstance(model.schema[c], pl.Struct)]
        model = model[structs[0]] if "coef" not in model.columns and structs else model.to_struct("model")
    if isinstance(model, pl.Series):
        if model.len() != 1 or not isinstance(model.dtype, pl.Struct):
            msg = "a model Series must be one Struct row (the output of fit)"
            raise ValueError(msg)
        # A scalar literal of the struct dtype: Polars 1.x cannot aggregate a Series literal's
        # `.first()` in group_by().agg or .over ("cannot aggregate a literal").
        return pl.lit(model[0], dtype=model.dtype)
    msg = f"model must be a column, an expression, a dict or a one-row DataFrame, got {type(model).__name__}"
    raise TypeError(msg)


def predict(
    model: IntoExpr | dict[str, Any] | pl.DataFrame | pl.Series,
    features: IntoFeatures,
    *,
    kind: PredictKind = "decision",
) -> pl.Expr:
    """Predict from a model column (one model per row, e.g. after a join) or a model object.

    Parameters
    ----------
    model
        The model struct column (name or expression), or a model given as a dict, a one-row
        DataFrame or a Struct Series, broadcast to every row.
    features
        Features in the same form as at fit time.
    kind : {"decision", "class", "proba"}
        ``x.w + b``; the class in the label's dtype (classification models); or the
        probability of the positive class (logistic models). For multiclass models
        "decision" gives the ``k`` class scores, "proba" the softmax probabilities
        (multinomial models) and "class" the arg-max class.

    Returns
    -------
    Expr
        Float64 for "decision" and "proba" (``List(Float64)`` of length ``k`` for multiclass
        models), the label dtype for "class". Rows with null features or a null model give
        null.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_sdca as ps
    >>> df = pl.DataFrame({"x": [-2.0, -1.0, 1.0, 2.0], "y": [False, False, True, True]})
    >>> model = df.select(ps.fit("y", ["x"], loss="logistic", l2=0.1).alias("model"))
    >>> df.select(ps.predict(model, ["x"], kind="class")).to_series().to_list()
    [False, False, True, True]
    """
    if kind not in ("decision", "class", "proba"):
        msg = f"invalid parameter `kind`: unknown value {kind!r}; expected one of decision, class, proba"
        raise ValueError(msg)
    args = [_model_expr(model), *_feature_exprs(features)]
    layout = {
        "n_feature_inputs": len(args) - 1,
        "has_weights": False,
        "n_features": None,
        "null_policy": "drop",
        "names": [_name(a) for a in args],
    }
    return register_plugin_function(
        plugin_path=_LIB,
        function_name="predict",
        args=args,
        kwargs={"layout": layout, "kind": kind},
        is_elementwise=True,
    )


class _SequenceOrder:
    """``order_by=`` of the CRF expressions, done on the expressions.

    Every input is sorted by ``(sequence, order_by)`` (stable), which also makes each sequence
    contiguous; per-row outputs are gathered back by the inverse permutation. Both are
    expression operations, so this works in ``select``, ``group_by().agg`` and ``.over``. A
    null ``order_by`` value nulls the row's sequence id, which the plugin reports.

    The two columns are sorted on as one struct key: Polars 1.x computes a sort on several
    keys wrongly under ``.over()`` (``arg_sort_by([a, b])`` returns indices that are not a
    permutation of the group's rows, seen on 1.30), while a single key sorts right in every
    context on 1.30 and 2.x. The struct sorts lexicographically by its fields.
    """

    def __init__(self, sequence: IntoExpr, order_by: IntoExpr | None) -> None:
        self.sequence = _expr(sequence, "sequence")
        self.order = None if order_by is None else _expr(order_by, "order_by")
        self.key = None if self.order is None else pl.struct(self.sequence, self.order)

    def sequence_arg(self) -> tuple[pl.Expr, str]:
        """The sequence input and the name its errors use."""
        if self.order is None:
            return self.sequence, _name(self.sequence)
        arg = self.sort(pl.when(self.order.is_not_null()).then(self.sequence))
        # Read in plugin errors as `column "s (sorted by order_by pos)", row 3: null value`.
        return arg, f"{_name(self.sequence)} (sorted by order_by {_name(self.order)})"

    def sort(self, expr: pl.Expr) -> pl.Expr:
        # A literal is one value, broadcast by the plugin: there is nothing to sort.
        if self.key is None or expr.meta.is_literal(allow_aliasing=True):
            return expr
        return expr.sort_by(self.key, maintain_order=True)

    def restore(self, expr: pl.Expr) -> pl.Expr:
        """Per-row outputs (in sorted order) back in input row order."""
        if self.key is None:
            return expr
        return expr.gather(pl.arg_sort_by(self.key, maintain_order=True).arg_sort())


def _crf_call(
    function_name: str,
    tag: IntoExpr,
    features: IntoFeatures,
    order: _SequenceOrder,
    options: dict[str, Any],
) -> pl.Expr:
    kwargs = _options(options, _CRF_OPTIONS)
    feature_exprs = [order.sort(e) for e in _feature_exprs(features)]
    sequence, sequence_name = order.sequence_arg()
    args = [order.sort(_expr(tag, "tag")), *feature_exprs, sequence]
    layout = {
        "n_feature_inputs": len(feature_exprs),
        "has_weights": False,
        "n_features": kwargs.pop("n_features"),
        "null_policy": kwargs.pop("null_policy"),
        "names": [*(_name(a) for a in args[:-1]), sequence_name],
    }
    fitted = _register(function_name, args, layout, kwargs, _internal.check_crf_kwargs)
    return order.restore(fitted) if function_name.endswith("_rows") else fitted


def crf_fit(
    tag: IntoExpr,
    features: IntoFeatures,
    *,
    sequence: IntoExpr,
    order_by: IntoExpr | None = None,
    **options: Unpack[CrfOptions],
) -> pl.Expr:
    """Fit a linear-chain CRF by SDCA with line search; one model struct per group.

    One token per row. Consecutive rows with equal ``sequence`` values form one sequence, in
    frame order (rows of a sequence must be contiguous), or, with ``order_by``, the rows are
    first sorted by ``(sequence, order_by)`` (any row order works). Minimises
    ``(l2/2)||w||^2 + (1/n) sum_i [log Z(x_i) - s_i(y_i)]`` over ``n`` sequences and returns
    the weights with the duality-gap certificate.

    Parameters
    ----------
    tag
        Tag column: strings, integers or booleans. The model's labels are the sorted distinct
        tags of the group.
    features
        Token attributes: one sparse ``List(Struct{index, value})`` column, a list of numeric
        columns, or one ``List(Float64)`` / ``Array`` column.
    sequence
        Column whose consecutive equal values form a sequence.
    order_by
        Column giving the token order within a sequence (no nulls); the inputs are sorted by
        ``(sequence, order_by)`` first, so row numbers in data errors count sorted rows.
    **options
        l2 : float, optional
            L2 strength ``> 0``; default ``1 / n`` (number of sequences), the paper's choice.
        tol : float
            Stop when the duality gap ``<= tol * primal`` (default 1e-6).
        max_epochs, check_every : int
            Epoch cap (default 100) and true-gap check period in epochs (default 1).
        sampling : {"gap", "uniform"}
            Next sequence proportionally to its block gap (default), or uniformly.
        non_uniform : float
            Fraction of gap-proportional draws under "gap" sampling (default 0.8).
        seed : int
            Random seed.
        max_memory : int, optional
            Refuse to start when the estimated memory exceeds this many bytes.
        max_seconds : float, optional
            Time budget; the fit stops not converged.
        max_sequence_length : int, optional
            Reject longer sequences.
        n_threads : int, optional
            Threads that compute the steps' oracles in parallel (a pipeline of ``2 n_threads``
            steps in flight). Default:
            every core (``POLARS_MAX_THREADS`` if set) in ``select``, ``group_by`` and ``over``
            (Polars calls the plugin for one group at a time); 1 for small fits and for
            queries collected on a thread of your own.
            The result depends on the seed and this number only (1 thread: the sequential
            algorithm; more: each oracle computed at the weights of the step ``2 n_threads``
            before its own).
        n_features : int, optional
            Width of sparse features (default: largest index + 1 in the group).
        null_policy : {"raise"}
            Nulls in any input raise (dropping rows would split sequences).
        on_error : {"raise", "null"}
            A group that cannot be fitted raises (default) or yields a null model whose
            ``status`` says why.

    Returns
    -------
    Expr
        A Struct with ``emission`` (``List(List(Float64))``: one list of ``n_attributes``
        weights per label), ``transition`` (``List(List(Float64))``: ``transition[k][l]`` for
        label ``k`` followed by ``l``), ``start``, ``end``, ``bias`` (``List(Float64)``, one per
        label), ``labels`` (``List(<tag dtype>)``, the order of every per-label list), ``l2``,
        ``primal``, ``dual``, ``gap``, ``epochs`` (UInt32), ``converged``, ``gap_trace``,
        ``n_sequences``, ``n_tokens``, ``n_attributes`` (UInt64), ``n_threads`` (UInt32, the
        thread count the result depends on) and ``status``.

    Raises
    ------
    ValueError
        An option value is out of range or unknown (raised here, before data is read).
    TypeError
        An unknown option, or an option of the wrong type.
    polars.exceptions.ComputeError
        Bad data (nulls, a sequence id that re-appears, a too long sequence, bad indices),
        naming the column and the row or sequence.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_sdca as ps
    >>> df = pl.DataFrame({"s": [0, 0, 1, 1], "x": [1.0, 0.0, 1.0, 0.0], "t": ["A", "B", "A", "B"]})
    >>> m = df.select(ps.crf_fit("t", ["x"], sequence="s", l2=0.1)).item()
    >>> m["labels"], m["converged"]
    (['A', 'B'], True)
    """
    return _crf_call("crf_fit", tag, features, _SequenceOrder(sequence, order_by), dict(options))


def crf_fit_rows(
    tag: IntoExpr,
    features: IntoFeatures,
    *,
    sequence: IntoExpr,
    order_by: IntoExpr | None = None,
    **options: Unpack[CrfOptions],
) -> pl.Expr:
    """Fit like :func:`crf_fit` and return per-token outputs of the group's model.

    Parameters
    ----------
    tag, features, sequence, order_by, **options
        As for :func:`crf_fit`.

    Returns
    -------
    Expr
        A Struct per row, in input row order (also with ``order_by``): ``prediction``
        (Viterbi tag, in the tag dtype), ``marginals`` (``List(Float64)``: ``p(y_t = k | x)``
        in the model's ``labels`` order) and ``gap`` (the block gap of the row's sequence;
        their mean over sequences is the model's gap).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_sdca as ps
    >>> df = pl.DataFrame({"s": [0, 0, 1, 1], "x": [1.0, 0.0, 1.0, 0.0], "t": [1, 2, 1, 2]})
    >>> out = df.select(ps.crf_fit_rows("t", ["x"], sequence="s", l2=0.1).alias("r")).unnest("r")
    >>> out["prediction"].to_list()
    [1, 2, 1, 2]
    """
    return _crf_call("crf_fit_rows", tag, features, _SequenceOrder(sequence, order_by), dict(options))


def crf_predict(
    model: IntoExpr | dict[str, Any] | pl.DataFrame | pl.Series,
    features: IntoFeatures,
    *,
    sequence: IntoExpr,
    order_by: IntoExpr | None = None,
    n_features: int | None = None,
    kind: CrfPredictKind = "labels",
) -> pl.Expr:
    """Viterbi tags (or label marginals) from a CRF model column (e.g. after a join) or a model
    object.

    Parameters
    ----------
    model
        The model struct column (name or expression; each sequence uses the model at its first
        row), or a model given as a dict, a one-row DataFrame or a Struct Series, broadcast.
    features
        Token attributes in the same form as at fit time. Sparse attribute indices the model
        does not know are ignored; dense features must have the model's ``n_attributes``
        columns.
    sequence
        Column whose consecutive equal values form a sequence.
    order_by
        Column giving the token order within a sequence, as for :func:`crf_fit`; a model
        column is sorted with the rows, and the tags come back in input row order.
    n_features : int, optional
        Width of sparse features (default: largest index + 1).
    kind : {"labels", "marginals"}
        "labels" (default): the Viterbi tag. "marginals": ``p(y_t = k | x)`` for every label
        ``k`` in the order of the model's ``labels`` (scaled forward-backward, as the fit's
        oracle).

    Returns
    -------
    Expr
        The Viterbi tag of every row, in the model's ``labels`` dtype, or a ``List(Float64)`` of
        label probabilities per row (null where the model is null).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_sdca as ps
    >>> df = pl.DataFrame({"s": [0, 0, 1, 1], "x": [1.0, 0.0, 1.0, 0.0], "t": ["A", "B", "A", "B"]})
    >>> m = df.select(ps.crf_fit("t", ["x"], sequence="s", l2=0.1)).item()
    >>> df.select(ps.crf_predict(m, ["x"], sequence="s")).to_series().to_list()
    ['A', 'B', 'A', 'B']
    >>> p = df.select(ps.crf_predict(m, ["x"], sequence="s", kind="marginals")).to_series()
    >>> [round(sum(row), 12) for row in p.to_list()], p[0][0] > 0.5
    ([1.0, 1.0, 1.0, 1.0], True)
    """
    if kind not in ("labels", "marginals"):
        msg = f"invalid parameter `kind`: unknown value {kind!r}; expected one of labels, marginals"
        raise ValueError(msg)
    order = _SequenceOrder(sequence, order_by)
    model_arg = _model_expr(model)
    if isinstance(model, (str, pl.Expr)):  # a column travels with its rows; a literal does not
        model_arg = order.sort(model_arg)
    sequence_arg, sequence_name = order.sequence_arg()
    args = [model_arg, *(order.sort(e) for e in _feature_exprs(features)), sequence_arg]
    layout = {
        "n_feature_inputs": len(args) - 2,
        "has_weights": False,
        "n_features": None if n_features is None else _number("n_features", n_features, int),
        "null_policy": "raise",
        "names": [*(_name(a) for a in args[:-1]), sequence_name],
    }
    return order.restore(
        register_plugin_function(
            plugin_path=_LIB,
            function_name="crf_predict",
            args=args,
            kwargs={"layout": layout, "kind": kind},
        )
    )
