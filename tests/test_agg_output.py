"""fit's two plugin calls: `fit_packed` per group, then `unpack_models` once for all groups.

`pl.col(y).sdca.fit(...)` registers `fit_packed` (one compact row per group: the model's
numbers and texts in one binary value, and its classes) under `unpack_models` (elementwise:
the model structs of every group in one call). The reference here is the plugin's one-call
`fit` symbol, which builds each group's 18-field model struct itself: every field, dtype and
null must be the same, whatever the loss, label dtype, failure or context (agg, select, over).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

import polars_sdca as ps
from polars_sdca import functions


def _direct(label: str, features: Any, **options: Any) -> pl.Expr:
    """The model of the plugin's `fit` symbol: one 18-field struct per call, no packing."""
    return functions._fit_call("fit", label, features, options)


def _frame(groups: int, rows: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = groups * rows
    x = rng.normal(size=(n, 3))
    g = np.repeat(np.arange(groups), rows)
    margin = (x * rng.normal(size=(groups, 3))[g]).sum(axis=1) + 0.3 * rng.normal(size=n)
    cls = np.digitize(margin, [-0.5, 0.5])
    return pl.DataFrame(
        {
            "g": g,
            "y": margin > 0,
            "yi": (margin > 0).astype(np.int64) * 2 - 1,
            "t": margin,
            "c": np.array(["lo", "mid", "hi"])[cls],
            "w": rng.uniform(0.5, 2.0, size=n),
            "x1": x[:, 0],
            "x2": x[:, 1],
            "x3": x[:, 2],
        }
    ).sample(fraction=1.0, shuffle=True, seed=seed)


FEATS = ["x1", "x2", "x3"]

CASES: list[tuple[str, dict[str, Any]]] = [
    ("y", {"loss": "logistic", "l2": 1e-2}),
    ("yi", {"loss": "hinge", "l2": 1e-2, "weights": "w"}),
    ("t", {"loss": "squared", "l2": 1e-3, "l1": 1e-3}),
    ("t", {"loss": "squared", "l2": 1e-2, "solver": "newton", "tol": 1e-2}),
    ("c", {"loss": "multinomial", "l2": 1e-2}),
    ("c", {"loss": "multiclass_hinge", "l2": 1e-2, "max_epochs": 3}),
]


@pytest.mark.parametrize(("label", "options"), CASES)
def test_agg_equals_the_direct_model(label: str, options: dict[str, Any]) -> None:
    df = _frame(60, 25)
    out = df.group_by("g").agg(pl.col(label).sdca.fit(FEATS, **options)).sort("g")
    expected = df.group_by("g").agg(_direct(label, FEATS, **options)).sort("g")
    assert out.schema == expected.schema
    assert out.equals(expected)
    lazy = df.lazy().group_by("g").agg(pl.col(label).sdca.fit(FEATS, **options))
    assert lazy.collect_schema() == out.schema


@pytest.mark.parametrize(("label", "options"), CASES[:3])
def test_select_and_over_equal_the_direct_model(label: str, options: dict[str, Any]) -> None:
    df = _frame(5, 40).sort("g")
    one = df.select(ps.fit(label, FEATS, **options))
    assert one.equals(df.select(_direct(label, FEATS, **options)))
    assert one.height == 1
    over = df.select(pl.col(label).sdca.fit(FEATS, **options).over("g"))
    assert over.equals(df.select(_direct(label, FEATS, **options).over("g")))


def test_logical_label_dtypes() -> None:
    # Decimal labels (a logical dtype): their packed rows are exported as Series and unpacked
    # through each group's classes.
    df = _frame(30, 30).with_columns(
        yd=pl.col("y").cast(pl.Int64).cast(pl.Decimal(5, 0)),
        td=pl.col("t").round(3).cast(pl.Decimal(12, 3)),
    )
    for label, loss in [("yd", "logistic"), ("td", "squared")]:
        out = df.group_by("g").agg(pl.col(label).sdca.fit(FEATS, l2=1e-2, loss=loss)).sort("g")
        expected = df.group_by("g").agg(_direct(label, FEATS, l2=1e-2, loss=loss)).sort("g")
        assert out.equals(expected), label
        assert out[label].struct.field("classes").dtype == pl.List(df.schema[label])
    models = df.group_by("g").agg(pl.col("yd").sdca.fit(FEATS, l2=1e-2))["yd"]
    classes = models.struct.field("classes").to_list()
    assert all([str(c) for c in row] == ["0", "1"] for row in classes)


def test_failed_groups_keep_their_status_and_nulls() -> None:
    df = pl.DataFrame(
        {"g": [1, 1, 2, 2, 3, 3], "y": [0, 1, 1, 1, 0, 1], "x": [1.0, -1.0, 2.0, 1.0, 0.5, -0.5]}
    )
    out = df.group_by("g").agg(pl.col("y").sdca.fit("x", on_error="null")).sort("g")
    expected = df.group_by("g").agg(_direct("y", "x", on_error="null")).sort("g")
    assert out.equals(expected)
    model = out["y"].struct.unnest()
    assert "all labels are +1" in model["status"][1]
    assert model["coef"][1] is None
    assert model["classes"][1] is None
    assert model["loss"][1] == "logistic"
    assert model["converged"].to_list() == [True, False, True]
    with pytest.raises(pl.exceptions.ComputeError, match="all labels are"):
        df.group_by("g").agg(pl.col("y").sdca.fit("x"))


def test_models_predict_and_warm_start() -> None:
    df = _frame(20, 40)
    models = df.group_by("g").agg(pl.col("y").sdca.fit(FEATS, l2=1e-2).alias("m"))
    joined = df.join(models, on="g")
    pred = joined.select(pl.col("m").sdca.predict(FEATS, kind="class"))["m"]
    assert pred.dtype == pl.Boolean
    assert (pred == joined["y"]).mean() > 0.8  # type: ignore[operator]
    # Warm-started from its own model, each group lands on the same certified model.
    warm = (
        joined.group_by("g")
        .agg(pl.col("y").sdca.fit(FEATS, l2=1e-2, warm_start=pl.col("m").first()))
        .join(models, on="g")
    )
    assert warm["y"].struct.field("converged").all()
    coef = np.array(warm["y"].struct.field("coef").to_list())
    cold = np.array(warm["m"].struct.field("coef").to_list())
    np.testing.assert_allclose(coef, cold, atol=1e-2)


def test_models_compose_with_when_then() -> None:
    df = _frame(4, 30).sort("g")
    model = pl.col("t").sdca.fit(FEATS, loss="squared", l2=1e-2)
    out = df.group_by("g", maintain_order=True).agg(pl.when(pl.col("g").first() != 2).then(model).alias("m"))
    m = out["m"]
    assert m.null_count() == 1
    assert m[2] is None
    assert m.struct.field("status").to_list() == ["ok", "ok", None, "ok"]
