"""A literal (or a one-value aggregation) among the inputs of every expression.

Polars hands a plugin a literal as a column of length 1. Where Polars broadcasts a literal (a
constant feature, weight, sequence id, group key; a model), the result must equal the one with
a real constant column, bit for bit, in ``select``, ``group_by().agg`` and ``.over``; where one
value for many rows is a mistake (the label, the tag), the error names the argument and the fix.
Before the one length check in the plugin, a literal feature was fitted as 1.0 on the first row
and 0.0 elsewhere (a wrong model, no error), and a literal first in the list panicked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.exceptions import ComputeError

import polars_sdca as ps

CONTEXTS = ("select", "group_by", "over")


def frame() -> pl.DataFrame:
    """Three groups of 14 rows (seven sequences of two tokens each) with constant columns."""
    rng = np.random.default_rng(3)
    n = 42
    x = rng.normal(size=(n, 2))
    y = (x[:, 0] - 0.5 * x[:, 1] + 0.7 * rng.normal(size=n) > 0).astype(np.int8)
    return pl.DataFrame(
        {
            "g": np.repeat([0, 1, 2], n // 3),
            "x0": x[:, 0],
            "x1": x[:, 1],
            "y": y,
            "t": x[:, 0] + 0.1 * rng.normal(size=n),
            "tag": np.where(y == 1, "B", "A"),
            "s": np.repeat(np.arange(n // 2), 2),
            "pos": np.tile([1, 0], n // 2),
            "c": np.full(n, 1.5),  # a constant feature, the literal's twin
            "w": np.full(n, 2.0),  # a constant weight
            "zero": np.zeros(n, dtype=np.int64),  # a constant sequence id or group key
        }
    )


def run(df: pl.DataFrame, expr: pl.Expr, context: str) -> pl.DataFrame:
    if context == "select":
        return df.select(expr.alias("out"))
    if context == "group_by":
        return df.group_by("g", maintain_order=True).agg(expr.alias("out"))
    return df.select(expr.over("g").alias("out"))


def same(literal: pl.Expr, column: pl.Expr, context: str, df: pl.DataFrame | None = None) -> None:
    """The literal's result equals the constant column's, and is a real fit."""
    df = frame() if df is None else df
    got, expected = run(df, literal, context), run(df, column, context)
    assert got.equals(expected), (got, expected)


C_LIT = pl.lit(1.5).alias("c")
FIT_POSITIONS: dict[str, tuple[list[Any], list[Any]]] = {
    "first": ([C_LIT, "x0", "x1"], ["c", "x0", "x1"]),
    "middle": (["x0", C_LIT, "x1"], ["x0", "c", "x1"]),
    "last": (["x0", "x1", C_LIT], ["x0", "x1", "c"]),
    "only": ([C_LIT], ["c"]),
}


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("position", list(FIT_POSITIONS))
def test_fit_literal_feature_is_a_constant_column(position: str, context: str) -> None:
    lit, col = FIT_POSITIONS[position]
    opts = {"loss": "logistic", "l2": 0.05, "tol": 1e-10, "solver": "sdca"}
    same(ps.fit("y", lit, **opts), ps.fit("y", col, **opts), context)  # type: ignore[arg-type]
    same(
        ps.fit_rows("t", lit, loss="squared", l2=0.05),
        ps.fit_rows("t", col, loss="squared", l2=0.05),
        context,
    )


def test_fit_literal_feature_coefficients() -> None:
    """The reported case: the literal's coefficient is the constant column's, not a first-row
    indicator's (and the model is a converged fit, not an empty one)."""
    df = frame()
    opts: dict[str, Any] = {"loss": "logistic", "l2": 0.05, "tol": 1e-10, "solver": "sdca"}
    lit = df.select(ps.fit("y", ["x0", "x1", C_LIT], **opts)).item()
    col = df.select(ps.fit("y", ["x0", "x1", "c"], **opts)).item()
    first_row_only = df.with_columns(c=pl.when(pl.int_range(pl.len()) == 0).then(1.5).otherwise(0.0))
    wrong = first_row_only.select(ps.fit("y", ["x0", "x1", "c"], **opts)).item()
    assert lit["converged"]
    assert lit["coef"] == col["coef"]
    assert lit["primal"] == col["primal"]
    assert lit["coef"] != pytest.approx(wrong["coef"], abs=1e-3)


@pytest.mark.parametrize("context", CONTEXTS)
def test_fit_literal_weights_and_warm_start(context: str) -> None:
    opts: dict[str, Any] = {"loss": "hinge", "l2": 0.05, "tol": 1e-8}
    same(
        ps.fit("y", ["x0", "x1"], weights=pl.lit(2.0), **opts),
        ps.fit("y", ["x0", "x1"], weights="w", **opts),
        context,
    )
    # A warm start given as a model object is a literal; as a column it is the same model per row.
    df = frame()
    model = df.select(ps.fit("y", ["x0", "x1"], **opts).alias("m"))
    joined = df.join(model, how="cross")
    same(
        ps.fit("y", ["x0", "x1"], warm_start=model, max_epochs=3, **opts),
        ps.fit("y", ["x0", "x1"], warm_start="m", max_epochs=3, **opts),
        context,
        joined,
    )


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("function", ["fit", "fit_rows", "crf_fit", "crf_fit_rows"])
def test_literal_label_or_tag_is_refused(function: str, context: str) -> None:
    expr = {
        "fit": lambda: ps.fit(pl.lit(1.0).alias("y"), ["x0"], loss="squared"),
        "fit_rows": lambda: ps.fit_rows(pl.lit(1).alias("y"), ["x0"]),
        "crf_fit": lambda: ps.crf_fit(pl.lit("A").alias("tag"), ["x0"], sequence="s"),
        "crf_fit_rows": lambda: ps.crf_fit_rows(
            pl.lit("A").alias("tag"), ["x0"], sequence="s", order_by="pos"
        ),
    }[function]()
    what = "tag" if function.startswith("crf") else "label"
    with pytest.raises(ComputeError) as info:
        run(frame(), expr, context)
    message = str(info.value)
    assert (
        f'{what} "{what if what == "tag" else "y"}" is a single value (a literal or an aggregation)'
        in message
    )
    assert f"pass a column with one {what} per row" in message
    assert "panicked" not in message


def test_fit_groups_literals() -> None:
    df = frame()
    opts: dict[str, Any] = {"loss": "logistic", "l2": 0.05, "tol": 1e-10}
    # A literal key is one group: the fit of the whole frame.
    by_lit = df.select(ps.fit_groups("y", ["x0", "x1"], by=pl.lit(0).alias("zero"), **opts)).unnest("y")
    by_col = df.select(ps.fit_groups("y", ["x0", "x1"], by="zero", **opts)).unnest("y")
    assert by_lit.equals(by_col)
    assert by_lit.height == 1
    assert by_lit["y"].item() == df.select(ps.fit("y", ["x0", "x1"], **opts)).item()
    for context in ("select", "group_by"):
        same(
            ps.fit_groups("y", ["x0", C_LIT], by="g", weights=pl.lit(2.0), **opts),
            ps.fit_groups("y", ["x0", "c"], by="g", weights="w", **opts),
            context,
        )
    with pytest.raises(ComputeError, match=r'label "y" is a single value .* one label per row'):
        df.select(ps.fit_groups(pl.lit(1).alias("y"), ["x0"], by="g"))


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("kind", ["decision", "class", "proba"])
def test_predict_literals(kind: str, context: str) -> None:
    df = frame()
    model = df.select(ps.fit("y", ["x0", "c"], loss="logistic", l2=0.05).alias("m"))
    joined = df.join(model, how="cross")
    column = pl.col("m").sdca.predict(["x0", "c"], kind=kind)  # type: ignore[arg-type]
    same(ps.predict(model, ["x0", C_LIT], kind=kind), column, context, joined)  # type: ignore[arg-type]
    same(pl.col("m").sdca.predict([C_LIT, "x0"][::-1], kind=kind), column, context, joined)  # type: ignore[arg-type]
    same(pl.col("m").first().sdca.predict(["x0", "c"], kind=kind), column, context, joined)  # type: ignore[arg-type]


CRF_OPTS: dict[str, Any] = {"l2": 0.1, "tol": 1e-9}


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("order_by", [None, "pos"])
def test_crf_literal_features_and_sequence(order_by: str | None, context: str) -> None:
    for fn in (ps.crf_fit, ps.crf_fit_rows):
        # A literal attribute is a constant column.
        same(
            fn("tag", ["x0", C_LIT], sequence="s", order_by=order_by, **CRF_OPTS),
            fn("tag", ["x0", "c"], sequence="s", order_by=order_by, **CRF_OPTS),
            context,
        )
        # A literal sequence id is one sequence (per group).
        same(
            fn("tag", [C_LIT, "x1"], sequence=pl.lit(0).alias("zero"), order_by=order_by, **CRF_OPTS),
            fn("tag", ["c", "x1"], sequence="zero", order_by=order_by, **CRF_OPTS),
            context,
        )
    # A literal order_by keeps the frame order.
    same(
        ps.crf_fit_rows("tag", ["x0"], sequence="s", order_by=pl.lit(0), **CRF_OPTS),
        ps.crf_fit_rows("tag", ["x0"], sequence="s", **CRF_OPTS),
        context,
    )


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("order_by", [None, "pos"])
def test_crf_predict_literals(order_by: str | None, context: str) -> None:
    df = frame()
    model = df.select(ps.crf_fit("tag", ["x0", "c"], sequence="s", **CRF_OPTS).alias("m"))
    joined = df.join(model, how="cross")
    column = pl.col("m").sdca.crf_predict(["x0", "c"], sequence="s", order_by=order_by)
    same(ps.crf_predict(model, ["x0", C_LIT], sequence="s", order_by=order_by), column, context, joined)
    same(
        pl.col("m").sdca.crf_predict([C_LIT, "x0"][::-1], sequence="s", order_by=order_by),
        column,
        context,
        joined,
    )
    same(
        ps.crf_predict(model, ["x0", "c"], sequence=pl.lit(0).alias("zero"), order_by=order_by),
        pl.col("m").sdca.crf_predict(["x0", "c"], sequence="zero", order_by=order_by),
        context,
        joined,
    )


def test_vector_literals_and_aggregations_are_broadcast() -> None:
    """A literal dense vector, a literal sparse row and a one-value aggregation are broadcast."""
    df = frame()
    sparse_dtype = pl.List(pl.Struct({"index": pl.Int64, "value": pl.Float64}))
    row = [{"index": 1, "value": 1.5}]
    cases: list[tuple[pl.Expr, pl.DataFrame]] = [
        (
            pl.lit(pl.Series("v", [[1.5, -1.0]])).first(),
            df.with_columns(v=pl.lit(pl.Series([[1.5, -1.0]])).first()),
        ),
        (
            pl.lit(pl.Series("v", [row], dtype=sparse_dtype)).first(),
            df.with_columns(v=pl.lit(pl.Series([row], dtype=sparse_dtype)).first()),
        ),
    ]
    for lit, with_column in cases:
        a = df.select(ps.fit("y", lit, loss="squared", l2=0.1)).item()
        b = with_column.select(ps.fit("y", "v", loss="squared", l2=0.1)).item()
        assert a == b
    mean = df.select(ps.fit("t", ["x0", pl.col("x1").mean()], loss="squared", l2=0.1)).item()
    as_column = df.with_columns(x1=pl.col("x1").mean()).select(
        ps.fit("t", ["x0", "x1"], loss="squared", l2=0.1)
    )
    assert mean == as_column.item()


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: ps.fit("y", ["x0", pl.col("x1").head(3)]),
            'feature "x1" has 3 rows but label "y" has 42; every input needs one value per row',
        ),
        (
            lambda: ps.fit("y", ["x0"], weights=pl.col("w").head(2)),
            'weights "w" has 2 rows but label "y" has 42',
        ),
        (
            lambda: ps.crf_fit("tag", ["x0"], sequence=pl.col("s").head(5)),
            'sequence "s" has 5 rows but tag "tag" has 42',
        ),
        (
            lambda: ps.predict(pl.col("m").head(2), ["x0"]),
            'model "m" has 2 rows but feature "x0" has 42',
        ),
    ],
)
def test_other_lengths_name_both_inputs(build: Callable[[], pl.Expr], message: str) -> None:
    df = frame()
    df = df.join(df.select(ps.fit("y", ["x0"]).alias("m")), how="cross")
    with pytest.raises(ComputeError) as info:
        df.select(build())
    assert message in str(info.value)
