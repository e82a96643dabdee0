"""fit_groups: one plugin call for every group, the same models as group_by().agg(fit(...))."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

import polars_sdca as ps


def _frame(groups: int, rows: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = groups * rows
    x = rng.normal(size=(n, 3))
    g = np.repeat(np.arange(groups), rows)
    w = rng.normal(size=(groups, 3))[g]
    margin = (x * w).sum(axis=1) + 0.5 * rng.normal(size=n)
    return pl.DataFrame(
        {
            "store": np.array([f"s{k % 97:03d}" for k in g]),
            "day": g % 3,
            "y": margin > 0,
            "t": margin,
            "w": rng.uniform(0.5, 2.0, size=n),
            "x1": x[:, 0],
            "x2": x[:, 1],
            "x3": x[:, 2],
        }
    ).sample(fraction=1.0, shuffle=True, seed=seed)  # groups interleaved


FEATS = ["x1", "x2", "x3"]


@pytest.mark.parametrize(
    ("label", "options"),
    [
        ("y", {"loss": "logistic", "l2": 1e-2}),
        ("y", {"loss": "hinge", "l2": 1e-2, "weights": "w", "sampling": "gap"}),
        ("t", {"loss": "squared", "l2": 1e-3, "l1": 1e-3}),
        ("t", {"loss": "quantile", "quantile": 0.7, "l2": 1e-3, "solver": "pdprox", "tol": 1e-4}),
    ],
)
def test_equals_group_by_bit_for_bit(label: str, options: dict[str, Any]) -> None:
    df = _frame(300, 30)
    expected = df.group_by("store", "day").agg(pl.col(label).sdca.fit(FEATS, **options)).sort("store", "day")
    out = df.select(ps.fit_groups(label, FEATS, by=["store", "day"], **options)).unnest(label)
    assert out.columns == ["store", "day", label]
    assert out.equals(expected)


def test_integer_labels_keep_each_groups_classes() -> None:
    # Groups coded {0, 1} and {-1, +1} in one Int64 column: each group's classes are its own,
    # as in group_by, though fit_groups builds each set once.
    df = _frame(90, 20)
    y = pl.col("y").cast(pl.Int64)
    df = df.with_columns(yi=pl.when(pl.col("day") == 1).then(y * 2 - 1).otherwise(y))
    expected = df.group_by("store", "day").agg(pl.col("yi").sdca.fit(FEATS, l2=1e-2)).sort("store", "day")
    out = df.select(ps.fit_groups("yi", FEATS, by=["store", "day"], l2=1e-2)).unnest("yi")
    assert out.equals(expected)
    classes = out.get_column("yi").struct.field("classes").list.first()
    assert set(classes.to_list()) == {0, -1}


def test_sparse_features_and_expressions_as_keys(conll_tokens: tuple[pl.DataFrame, int]) -> None:
    frame, d = conll_tokens
    df = frame.head(6_000).with_columns(block=pl.col("sentence") // 40)
    opts = {"loss": "logistic", "l2": 1e-3, "n_features": d, "on_error": "null"}
    expected = df.group_by("block").agg(pl.col("is_entity").sdca.fit("features", **opts)).sort("block")
    out = df.select(ps.fit_groups("is_entity", "features", by=pl.col("block"), **opts)).unnest("is_entity")
    assert out.equals(expected)
    assert out["is_entity"].struct.field("converged").sum() > 0


def test_failing_groups() -> None:
    df = pl.DataFrame(
        {"g": [1, 1, 2, 2, 3, 3], "y": [0, 1, 1, 1, 0, 1], "x": [1.0, -1.0, 2.0, 1.0, 0.5, -0.5]}
    )
    out = df.select(ps.fit_groups("y", "x", by="g", on_error="null")).unnest("y")
    status = out["y"].struct.field("status").to_list()
    assert status[0] == "ok"
    assert status[2] == "ok"
    assert "all labels are +1" in status[1]
    assert out["y"].struct.field("coef").to_list()[1] is None
    with pytest.raises(pl.exceptions.ComputeError, match=r"group g=2: .*all labels are"):
        df.select(ps.fit_groups("y", "x", by="g"))


def test_null_keys_form_a_group_and_lazy_plans_work() -> None:
    df = pl.DataFrame({"g": [None, None, 1, 1], "y": [0, 1, 1, 0], "x": [1.0, -1.0, 2.0, -1.0]})
    out = df.lazy().select(ps.fit_groups("y", "x", by="g", l2=0.1)).unnest("y").collect()
    expected = df.group_by("g").agg(pl.col("y").sdca.fit("x", l2=0.1)).sort("g")
    assert out.equals(expected)
    schema = df.lazy().select(ps.fit_groups("y", "x", by="g")).collect_schema()
    assert list(schema) == ["y"]


def test_bad_arguments() -> None:
    df = pl.DataFrame({"y": [0, 1], "x": [1.0, 2.0]})
    with pytest.raises(ValueError, match="by is empty"):
        ps.fit_groups("y", "x", by=[])
    with pytest.raises(pl.exceptions.ComputeError, match='the key "y" has the label\'s name'):
        df.select(ps.fit_groups("y", "x", by="y"))
    with pytest.raises(ValueError, match="l2"):
        ps.fit_groups("y", "x", by="x", l2=-1.0)


def test_group_by_exports_each_label_with_its_own_schema() -> None:
    """group_by().agg's hand-written export (src/agg.rs): a model schema kept per label name and
    dtype, a Decimal label (a logical dtype: the generic export) and failed groups among
    fitted ones give the same models as fit_groups."""
    df = _frame(40, 30).with_columns(
        t2=pl.col("t") * 2, td=pl.col("t").round(3).cast(pl.Decimal(12, 3)), yi=pl.col("y").cast(pl.Int8)
    )
    df = df.with_columns(yi=pl.when(pl.col("store") == "s007").then(1).otherwise(pl.col("yi")).cast(pl.Int8))
    cases = {
        "t": {"loss": "squared", "l2": 1e-3},
        "t2": {"loss": "squared", "l2": 1e-3},
        "td": {"loss": "squared", "l2": 1e-3},
        "yi": {"loss": "logistic", "l2": 1e-2, "on_error": "null"},
    }
    out = df.group_by("store").agg(pl.col(c).sdca.fit(FEATS, **o) for c, o in cases.items()).sort("store")
    for c, o in cases.items():
        expected = df.select(ps.fit_groups(c, FEATS, by="store", **o)).unnest(c)
        assert out.select("store", c).equals(expected), c
    status = out.filter(pl.col("store") == "s007")["yi"].struct.field("status").item()
    assert "all labels are +1" in status
