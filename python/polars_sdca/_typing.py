"""Type aliases and the typed option sets shared by the functional API and the namespace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypedDict, Union

import polars as pl

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TypeAlias

Loss = Literal[
    "hinge",
    "smooth_hinge",
    "squared_hinge",
    "logistic",
    "squared",
    "absolute",
    "epsilon_insensitive",
    "quantile",
    "multiclass_hinge",
    "multiclass_smooth_hinge",
    "multinomial",
]
"""Names accepted by ``loss=`` (DESIGN.md section 3)."""

Solver = Literal["auto", "sdca", "accelerated", "pdprox", "newton", "cd"]
GroupNorm = Literal["l2", "linf"]
PdproxOutput = Literal["last", "average"]
PdproxVariant = Literal["dual", "primal"]
Sampling = Literal["uniform", "permutation", "gap"]
NullPolicy = Literal["raise", "drop"]
OnError = Literal["raise", "null"]
PredictKind = Literal["decision", "class", "proba"]
Scoring = Literal["auto", "log_loss", "accuracy", "squared_error", "absolute_error", "hinge"]
"""Names accepted by ``scoring=`` of :func:`polars_sdca.fit_cv`."""
CvSelect = Literal["best", "one_standard_error"]
GroupsKind = Literal["model", "path", "cv"]
"""What :func:`polars_sdca.fit_groups` fits per group."""
CrfPredictKind = Literal["labels", "marginals"]

IntoExpr: TypeAlias = str | pl.Expr
"""A column name or an expression."""

IntoFeatures: TypeAlias = Union[str, pl.Expr, "Sequence[str | pl.Expr]"]
"""One sparse / vector column, or a list of numeric columns."""


class _SharedFitOptions(TypedDict, total=False):
    """The fit options every fit takes (all but ``l1`` and ``l2``, which paths also take as
    lists)."""

    loss: Loss
    smoothing: float
    epsilon: float
    quantile: float
    solver: Solver
    sampling: Sampling
    tol: float
    max_epochs: int
    check_every: int
    seed: int
    fit_intercept: bool
    shrinking: bool
    intercept_scaling: float
    weights: IntoExpr | None
    warm_start: IntoExpr | dict[str, Any] | pl.DataFrame | pl.Series | None
    n_features: int | None
    max_seconds: float | None
    max_memory: int | None
    null_policy: NullPolicy
    on_error: OnError
    groups: Sequence[int] | None
    group_norm: GroupNorm
    output: PdproxOutput
    pdprox_variant: PdproxVariant


class FitOptions(_SharedFitOptions, total=False):
    """Keyword options of :func:`polars_sdca.fit` and :func:`polars_sdca.fit_rows`."""

    l2: float
    l1: float


class PathOptions(_SharedFitOptions, total=False):
    """Keyword options of :func:`polars_sdca.fit_path`: a fit's, a list for the penalty the path
    runs over, and the computed grid's size and range."""

    l2: float | Sequence[float]
    l1: float | Sequence[float]
    n_l1: int
    l1_min_ratio: float
    n_l2: int | None
    l2_min_ratio: float
    # One mixing in (0, 1]; fit_cv also takes a list of them (one path per value).
    l1_ratio: float | Sequence[float] | None
    screening: bool


class CvOptions(PathOptions, total=False):
    """Keyword options of :func:`polars_sdca.fit_cv`: a path's and the cross-validation's."""

    folds: int
    fold_column: IntoExpr | None
    scoring: Scoring
    select: CvSelect


class CrfOptions(TypedDict, total=False):
    """Keyword options of :func:`polars_sdca.crf_fit` and :func:`polars_sdca.crf_fit_rows`."""

    l2: float | None
    tol: float
    max_epochs: int
    check_every: int
    sampling: Literal["gap", "uniform"]
    non_uniform: float
    seed: int
    max_memory: int | None
    max_seconds: float | None
    max_sequence_length: int | None
    n_threads: int | None
    n_features: int | None
    null_policy: Literal["raise"]
    on_error: OnError
