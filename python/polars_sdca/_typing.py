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

Solver = Literal["auto", "sdca", "accelerated", "pdprox", "newton"]
GroupNorm = Literal["l2", "linf"]
PdproxOutput = Literal["last", "average"]
PdproxVariant = Literal["dual", "primal"]
Sampling = Literal["uniform", "permutation", "gap"]
NullPolicy = Literal["raise", "drop"]
OnError = Literal["raise", "null"]
PredictKind = Literal["decision", "class", "proba"]
CrfPredictKind = Literal["labels", "marginals"]

IntoExpr: TypeAlias = str | pl.Expr
"""A column name or an expression."""

IntoFeatures: TypeAlias = Union[str, pl.Expr, "Sequence[str | pl.Expr]"]
"""One sparse / vector column, or a list of numeric columns."""


class FitOptions(TypedDict, total=False):
    """Keyword options of :func:`polars_sdca.fit` and :func:`polars_sdca.fit_rows`."""

    loss: Loss
    l2: float
    l1: float
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
