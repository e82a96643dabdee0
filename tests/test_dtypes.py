"""Every numeric dtype Polars has is accepted for features, labels and weights.

Feature stores and databases hand over Decimal, 8- to 128-bit integers and 16- to 64-bit
floats. The data here take values every dtype holds exactly (small non-negative integers), so a
fit on a column of any dtype must equal the Float64 fit bit for bit. Decimal used to be
rejected ("feature columns must be numeric").
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

import polars_sdca as ps

# Every numeric dtype of the installed Polars (Float16, Int128 and UInt128 are newer than 1.30).
_NAMES = "Int8 Int16 Int32 Int64 Int128 UInt8 UInt16 UInt32 UInt64 UInt128 Float16 Float32 Float64"
NUMERIC: list[Any] = [
    *(getattr(pl, name) for name in _NAMES.split() if hasattr(pl, name)),
    pl.Decimal(10, 2),
    pl.Decimal(38, 0),
    pl.Decimal(38, 10),
]
INTEGER = [d for d in NUMERIC if d.is_integer()]


def dtype_id(dt: Any) -> str:
    return str(dt).replace(" ", "")


def frame() -> pl.DataFrame:
    """Features in 0..5, binary labels {0, 1}, regression labels and classes in 0..2, weights
    in 1..3: exact in every numeric dtype (Decimal(38, 10) holds them exactly)."""
    rng = np.random.default_rng(5)
    n = 40
    x = rng.integers(0, 6, size=(n, 2)).astype(float)
    score = x[:, 0] - x[:, 1] + rng.normal(size=n)
    return pl.DataFrame(
        {
            "x0": x[:, 0],
            "x1": x[:, 1],
            "y": (score > 0).astype(float),
            "t": np.clip(np.round(score + 2), 0, 5),
            "k": np.digitize(score, [-1.0, 1.0]).astype(float),
            "w": rng.integers(1, 4, size=n).astype(float),
        }
    )


def fit_of(df: pl.DataFrame, label: str, features: Any, **opts: Any) -> dict[str, Any]:
    m = df.select(ps.fit(label, features, l2=0.05, tol=1e-10, **opts)).item()
    assert m["status"] in ("ok",), m["status"]
    return {k: m[k] for k in ("coef", "intercept", "primal", "dual", "gap", "epochs")}


@pytest.mark.parametrize("dtype", NUMERIC, ids=dtype_id)
def test_feature_columns_of_every_numeric_dtype(dtype: Any) -> None:
    df = frame()
    cast = df.with_columns(pl.col("x0", "x1").cast(dtype))
    assert fit_of(cast, "y", ["x0", "x1"]) == fit_of(df, "y", ["x0", "x1"])
    # One List or Array column of that dtype, and the values of a sparse column.
    vectors = {
        "list": lambda dt: pl.concat_list("x0", "x1").cast(pl.List(dt)),
        "array": lambda dt: pl.concat_list("x0", "x1").cast(pl.List(dt)).list.to_array(2),
        "sparse": lambda dt: pl.concat_list(
            pl.struct(index=pl.lit(0, pl.UInt32), value=pl.col("x0").cast(dt)),
            pl.struct(index=pl.lit(1, pl.UInt32), value=pl.col("x1").cast(dt)),
        ),
    }
    for form, expr in vectors.items():
        got = fit_of(df.with_columns(v=expr(dtype)), "y", "v")
        assert got == fit_of(df.with_columns(v=expr(pl.Float64)), "y", "v"), form
    # Prediction and CRF attributes go through the same conversion.
    model = df.select(ps.fit("y", ["x0", "x1"], l2=0.05).alias("m"))
    assert cast.select(ps.predict(model, ["x0", "x1"])).equals(df.select(ps.predict(model, ["x0", "x1"])))
    crf = {"sequence": pl.int_range(pl.len()) // 4, "l2": 0.1}
    tag = pl.col("k").cast(pl.Int64)
    a = cast.select(ps.crf_fit(tag, ["x0", "x1"], **crf)).item()
    b = df.select(ps.crf_fit(tag, ["x0", "x1"], **crf)).item()
    assert (a["emission"], a["primal"]) == (b["emission"], b["primal"])


@pytest.mark.parametrize("dtype", NUMERIC, ids=dtype_id)
def test_labels_and_weights_of_every_numeric_dtype(dtype: Any) -> None:
    df = frame()
    cast = df.with_columns(pl.col("y", "t", "w").cast(dtype))
    assert fit_of(cast, "y", ["x0", "x1"], loss="logistic") == fit_of(df, "y", ["x0", "x1"], loss="logistic")
    assert fit_of(cast, "t", ["x0", "x1"], loss="squared") == fit_of(df, "t", ["x0", "x1"], loss="squared")
    weighted = {"loss": "hinge", "weights": "w"}
    assert fit_of(cast, "y", ["x0", "x1"], **weighted) == fit_of(df, "y", ["x0", "x1"], **weighted)
    # Binary classes come back in the label dtype.
    classes = cast.select(ps.fit("y", ["x0", "x1"], l2=0.05)).item()["classes"]
    assert pl.Series(classes).cast(pl.Float64).to_list() == [0.0, 1.0]
    rows = cast.select(ps.fit_rows("y", ["x0", "x1"], l2=0.05).struct.field("prediction"))
    assert rows.schema["prediction"] == dtype


@pytest.mark.parametrize("dtype", INTEGER, ids=dtype_id)
def test_multiclass_labels_and_tags_of_every_integer_dtype(dtype: Any) -> None:
    df = frame()
    cast = df.with_columns(pl.col("k").cast(dtype))
    reference = fit_of(df.with_columns(pl.col("k").cast(pl.Int64)), "k", ["x0", "x1"], loss="multinomial")
    assert fit_of(cast, "k", ["x0", "x1"], loss="multinomial") == reference
    crf = {"sequence": pl.int_range(pl.len()) // 4, "l2": 0.1}
    tags = cast.select(ps.crf_fit_rows("k", ["x0", "x1"], **crf).struct.field("prediction"))
    assert tags.schema["prediction"] == dtype
