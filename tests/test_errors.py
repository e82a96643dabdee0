"""Bad input raises a clear exception naming the column / row and the fix; nothing panics.

Option errors are raised when the expression is built (ValueError / TypeError); data errors
come from the plugin as ComputeError. Each case asserts the exception type and our part of
the message.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.exceptions import ComputeError

import polars_sdca as ps

BASE = pl.DataFrame(
    {
        "x0": [0.5, -1.0, 2.0, 0.1, -0.3, 1.2],
        "x1": [1.0, 0.0, -1.0, 0.4, 0.2, -0.7],
        "y": [1, -1, 1, -1, 1, -1],
        "t": [0.3, -1.2, 2.2, 0.0, 0.5, -0.1],
        "w": [1.0, 1.0, 2.0, 1.0, 0.5, 1.0],
    }
)
X = ["x0", "x1"]


def sparse(rows: list[list[tuple[int, float]]]) -> pl.Series:
    dtype = pl.List(pl.Struct({"index": pl.Int64, "value": pl.Float64}))
    return pl.Series("sp", [[{"index": i, "value": v} for i, v in r] for r in rows], dtype=dtype)


SP_OK = [[(0, 1.0)], [(1, 1.0)], [(0, -1.0), (2, 0.5)], [(2, 1.0)], [(1, -1.0)], [(0, 0.3)]]


def with_sparse(rows: list[list[tuple[int, float]]]) -> pl.DataFrame:
    return BASE.with_columns(sparse(rows))


# (id, frame, expression builder, exception, message part)
Case = tuple[str, Callable[[], pl.DataFrame], Callable[[], pl.Expr], type[Exception], str]

OPTION_CASES: list[tuple[str, dict, type[Exception], str]] = [
    ("unknown loss", {"loss": "hinj"}, ValueError, 'unknown loss "hinj"; expected one of hinge'),
    ("l2 zero", {"l2": 0.0}, ValueError, "`l2`"),
    ("l2 negative", {"l2": -1.0}, ValueError, "`l2`"),
    ("l2 nan", {"l2": float("nan")}, ValueError, "`l2`"),
    ("l1 negative", {"l1": -0.1}, ValueError, "`l1`"),
    ("tol zero", {"tol": 0.0}, ValueError, "`tol`"),
    ("max_epochs zero", {"max_epochs": 0}, ValueError, "`max_epochs`"),
    ("check_every zero", {"check_every": 0}, ValueError, "`check_every`"),
    ("seed negative", {"seed": -1}, ValueError, "`seed`"),
    ("unknown solver", {"solver": "lbfgs"}, ValueError, "expected one of auto, sdca, accelerated"),
    ("accelerated non-smooth loss", {"solver": "accelerated", "loss": "hinge"}, ValueError, "`solver`"),
    ("unknown sampling", {"sampling": "cyclic"}, ValueError, "expected one of uniform, permutation"),
    ("smoothing zero", {"loss": "smooth_hinge", "smoothing": 0.0}, ValueError, "`smoothing`"),
    ("epsilon negative", {"loss": "epsilon_insensitive", "epsilon": -1.0}, ValueError, "`epsilon`"),
    ("intercept_scaling zero", {"intercept_scaling": 0.0}, ValueError, "`intercept_scaling`"),
    ("max_seconds zero", {"max_seconds": 0.0}, ValueError, "`max_seconds`"),
    ("max_memory zero", {"max_memory": 0}, ValueError, "`max_memory`"),
    ("max_memory float", {"max_memory": 1e9}, TypeError, "max_memory must be an integer"),
    ("on_error unknown", {"on_error": "ignore"}, ValueError, "`on_error`"),
    ("null_policy unknown", {"null_policy": "skip"}, ValueError, "`null_policy`"),
    ("l2 string", {"l2": "small"}, TypeError, "l2 must be a number"),
    ("l2 bool", {"l2": True}, TypeError, "l2 must be a number"),
    ("max_epochs float", {"max_epochs": 2.5}, TypeError, "max_epochs must be an integer"),
    ("loss not a string", {"loss": 3}, TypeError, "loss must be a string"),
    ("fit_intercept not bool", {"fit_intercept": 1}, TypeError, "fit_intercept must be a bool"),
    ("unknown option", {"lamda": 1.0}, TypeError, "unknown option(s) ['lamda']"),
]


@pytest.mark.parametrize(
    ("opts", "exc", "msg"), [c[1:] for c in OPTION_CASES], ids=[c[0] for c in OPTION_CASES]
)
def test_bad_options_raise_when_building_the_expression(opts: dict, exc: type[Exception], msg: str) -> None:
    with pytest.raises(exc, match=msg.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        ps.fit("y", X, **opts)


def test_bad_feature_arguments() -> None:
    with pytest.raises(ValueError, match="features is empty"):
        ps.fit("y", [])
    with pytest.raises(TypeError, match="features must be"):
        ps.fit("y", 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown value 'prob'"):
        ps.predict("m", X, kind="prob")  # type: ignore[arg-type]


def test_numpy_scalars_are_accepted() -> None:
    m = BASE.select(ps.fit("y", X, l2=np.float64(1e-2), max_epochs=np.int64(50), seed=np.uint8(3))).item()
    assert m["status"] in ("ok", "max_epochs reached before tol")


DATA_CASES: list[Case] = [
    (
        "null label",
        lambda: BASE.with_columns(y=pl.Series([1, None, 1, -1, 1, -1])),
        lambda: ps.fit("y", X),
        ComputeError,
        'column "y", row 1: null value',
    ),
    (
        "null feature",
        lambda: BASE.with_columns(x1=pl.Series([1.0, 0.0, None, 0.4, 0.2, -0.7])),
        lambda: ps.fit("y", X),
        ComputeError,
        'column "x1", row 2: null value',
    ),
    (
        "null weight",
        lambda: BASE.with_columns(w=pl.Series([1.0, None, 1.0, 1.0, 1.0, 1.0])),
        lambda: ps.fit("y", X, weights="w"),
        ComputeError,
        'column "w", row 1: null value',
    ),
    (
        "nan feature",
        lambda: BASE.with_columns(x0=pl.Series([0.5, -1.0, float("nan"), 0.1, -0.3, 1.2])),
        lambda: ps.fit("y", X),
        ComputeError,
        "row 2: feature value NaN is not finite",
    ),
    (
        "inf feature",
        lambda: BASE.with_columns(x0=pl.Series([0.5, float("-inf"), 2.0, 0.1, -0.3, 1.2])),
        lambda: ps.fit("y", X),
        ComputeError,
        "row 1: feature value -inf is not finite",
    ),
    (
        "string feature column",
        lambda: BASE.with_columns(s=pl.lit("a")),
        lambda: ps.fit("y", ["x0", "s"]),
        ComputeError,
        'column "s": feature columns must be numeric',
    ),
    (
        "nested list feature",
        lambda: BASE.with_columns(n=pl.lit([[1.0]])),
        lambda: ps.fit("y", "n"),
        ComputeError,
        'column "n": feature columns must be numeric',
    ),
    (
        "dense vectors of unequal length",
        lambda: BASE.with_columns(
            v=pl.Series([[1.0, 2.0], [1.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [0.0, 0.0]])
        ),
        lambda: ps.fit("y", "v"),
        ComputeError,
        'column "v", row 1: has 1 values but row 0 has 2',
    ),
    (
        "negative sparse index",
        lambda: with_sparse([[(0, 1.0)], [(-3, 1.0)], *SP_OK[2:]]),
        lambda: ps.fit("y", "sp"),
        ComputeError,
        "row 1: feature index -3 is negative",
    ),
    (
        "sparse index beyond n_features",
        lambda: with_sparse(SP_OK),
        lambda: ps.fit("y", "sp", n_features=2),
        ComputeError,
        "row 2: feature index 2 >= n_features 2",
    ),
    (
        "duplicate sparse index",
        lambda: with_sparse([*SP_OK[:3], [(2, 1.0), (2, 0.5)], *SP_OK[4:]]),
        lambda: ps.fit("y", "sp"),
        ComputeError,
        "row 3: feature index 2 appears more than once",
    ),
    (
        "null inside sparse row",
        lambda: BASE.with_columns(
            sp=pl.Series(
                [[{"index": 0, "value": 1.0}], [{"index": 1, "value": None}], [], [], [], []],
                dtype=pl.List(pl.Struct({"index": pl.Int64, "value": pl.Float64})),
            )
        ),
        lambda: ps.fit("y", "sp"),
        ComputeError,
        'column "sp", row 1: null value',
    ),
    (
        "sparse struct without value field",
        lambda: BASE.with_columns(sp=pl.lit([{"index": 1, "v": 1.0}])),
        lambda: ps.fit("y", "sp"),
        ComputeError,
        "sparse features must be List(Struct{index: integer, value: number}), "
        "got List(Struct{index: i64, v: f64})",
    ),
    (
        "float sparse index",
        lambda: BASE.with_columns(sp=pl.lit([{"index": 1.0, "value": 1.0}])),
        lambda: ps.fit("y", "sp"),
        ComputeError,
        "got List(Struct{index: f64, value: f64})",
    ),
    (
        "empty frame",
        lambda: BASE.clear(),
        lambda: ps.fit("y", X),
        ComputeError,
        "no rows to fit",
    ),
    (
        "one class",
        lambda: BASE.with_columns(y=pl.lit(1)),
        lambda: ps.fit("y", X, loss="hinge"),
        ComputeError,
        "all labels are +1: a classifier needs at least two classes",
    ),
    (
        "label outside the binary domain",
        lambda: BASE.with_columns(y=pl.Series([1, -1, 2, -1, 1, -1])),
        lambda: ps.fit("y", X, loss="logistic"),
        ComputeError,
        'column "y", row 2: label 2 is not valid for binary loss "logistic"',
    ),
    (
        "labels mixing -1, 0 and 1",
        lambda: BASE.with_columns(y=pl.Series([1, -1, 0, -1, 1, -1])),
        lambda: ps.fit("y", X, loss="hinge"),
        ComputeError,
        "row 2: label 0 is not valid",
    ),
    (
        "string labels for a binary loss",
        lambda: BASE.with_columns(y=pl.lit("spam")),
        lambda: ps.fit("y", X, loss="hinge"),
        ComputeError,
        "labels of dtype str are not supported",
    ),
    (
        "nan regression label",
        lambda: BASE.with_columns(t=pl.Series([0.3, float("nan"), 2.2, 0.0, 0.5, -0.1])),
        lambda: ps.fit("t", X, loss="squared"),
        ComputeError,
        "row 1: label NaN is not valid for loss `squared`",
    ),
    (
        "negative weight",
        lambda: BASE.with_columns(w=pl.Series([1.0, 1.0, -2.0, 1.0, 1.0, 1.0])),
        lambda: ps.fit("y", X, weights="w"),
        ComputeError,
        'column "w": row 2: sample weight -2 is invalid',
    ),
    (
        "all weights zero",
        lambda: BASE.with_columns(w=pl.lit(0.0)),
        lambda: ps.fit("y", X, weights="w"),
        ComputeError,
        "every sample weight is zero",
    ),
]


@pytest.mark.parametrize(
    ("frame", "expr", "exc", "msg"), [c[1:] for c in DATA_CASES], ids=[c[0] for c in DATA_CASES]
)
def test_bad_data_raises_with_column_and_row(
    frame: Callable[[], pl.DataFrame], expr: Callable[[], pl.Expr], exc: type[Exception], msg: str
) -> None:
    with pytest.raises(exc) as info:
        frame().select(expr())
    assert msg in str(info.value)
    assert "panicked" not in str(info.value)


def _model(loss: str = "hinge", label: str = "y") -> pl.DataFrame:
    return BASE.select(ps.fit(label, X, loss=loss, l2=0.1).alias("m"))  # type: ignore[arg-type]


PREDICT_CASES: list[Case] = [
    (
        "dense width mismatch",
        lambda: BASE.join(_model(), how="cross"),
        lambda: pl.col("m").sdca.predict(["x0"]),
        ComputeError,
        "model width vs dense feature columns: expected 2, got 1",
    ),
    (
        "sparse index beyond the model",
        lambda: with_sparse(SP_OK).join(_model(), how="cross"),
        lambda: pl.col("m").sdca.predict("sp"),
        ComputeError,
        "row 2: feature index 2 >= model width 2",
    ),
    (
        "proba from a hinge model",
        lambda: BASE.join(_model(), how="cross"),
        lambda: pl.col("m").sdca.predict(X, kind="proba"),
        ComputeError,
        'kind="proba" needs a logistic or multinomial model',
    ),
    (
        "class from a regression model",
        lambda: BASE.join(_model("squared", "t"), how="cross"),
        lambda: pl.col("m").sdca.predict(X, kind="class"),
        ComputeError,
        'kind="class" needs a classification model',
    ),
    (
        "model column is not a model",
        lambda: BASE,
        lambda: pl.col("t").sdca.predict(X),
        ComputeError,
        "predict needs a model struct column",
    ),
]


@pytest.mark.parametrize(
    ("frame", "expr", "exc", "msg"), [c[1:] for c in PREDICT_CASES], ids=[c[0] for c in PREDICT_CASES]
)
def test_bad_predict_input(
    frame: Callable[[], pl.DataFrame], expr: Callable[[], pl.Expr], exc: type[Exception], msg: str
) -> None:
    with pytest.raises(exc) as info:
        frame().select(expr())
    assert msg in str(info.value)


def test_unsorted_sparse_rows_are_allowed() -> None:
    unsorted = [[(2, 0.5), (0, -1.0)] if r == [(0, -1.0), (2, 0.5)] else r for r in SP_OK]
    a = with_sparse(SP_OK).select(ps.fit("y", "sp", loss="logistic", l2=0.1)).item()
    b = with_sparse(unsorted).select(ps.fit("y", "sp", loss="logistic", l2=0.1)).item()
    assert a["coef"] == pytest.approx(b["coef"], abs=1e-12)


@pytest.mark.parametrize("scale", [1e150, 1e-150])
def test_extreme_magnitudes_stay_finite(scale: float) -> None:
    df = BASE.with_columns(pl.col(X) * scale)
    for loss in ("logistic", "hinge", "squared"):
        label = "t" if loss == "squared" else "y"
        m = df.select(ps.fit(label, X, loss=loss, l2=1e-2, max_epochs=20)).item()
        assert all(np.isfinite(m["coef"])), (loss, scale, m)
        assert np.isfinite(m["gap"])
        assert m["gap"] >= 0


def test_all_zero_and_constant_features() -> None:
    df = BASE.with_columns(z=pl.lit(0.0), c=pl.lit(3.0))
    m = df.select(ps.fit("y", ["z", "c", "x0"], loss="hinge", l2=1e-2, tol=1e-8, max_epochs=5000)).item()
    assert m["converged"]
    assert m["coef"][0] == 0.0
    zero_rows = BASE.with_columns(pl.when(pl.col("t") > 0).then(pl.col(X)).otherwise(0.0))
    m = zero_rows.select(ps.fit("t", X, loss="absolute", fit_intercept=False, l2=1e-2, tol=1e-6)).item()
    assert np.isfinite(m["gap"])
    assert m["gap"] >= 0


def test_on_error_null_isolates_the_failed_group() -> None:
    df = pl.concat(
        [
            BASE.with_columns(g=pl.lit(0)),
            BASE.with_columns(g=pl.lit(1), y=pl.lit(1, dtype=pl.Int64)),
            BASE.with_columns(g=pl.lit(2)),
        ]
    )
    out = (
        df.group_by("g")
        .agg(pl.col("y").sdca.fit(X, loss="hinge", l2=0.1, on_error="null").alias("m"))
        .sort("g")
        .unnest("m")
    )
    assert out["coef"].is_null().to_list() == [False, True, False]
    assert out["status"][0] == "ok" or out["status"][0].startswith("max_epochs")
    assert "all labels are +1" in out["status"][1]
    assert out["loss"].to_list() == ["hinge"] * 3
    alone = BASE.select(ps.fit("y", X, loss="hinge", l2=0.1)).item()
    assert out.filter(pl.col("g") == 0)["coef"].item().to_list() == alone["coef"]
    with pytest.raises(ComputeError, match="all labels are"):
        df.group_by("g").agg(pl.col("y").sdca.fit(X, loss="hinge", l2=0.1))


def test_max_memory_refuses_the_large_group_only() -> None:
    """``max_memory`` sizes each group's fit before it allocates: the big group fails with both
    numbers (a null model with ``on_error="null"``), the small ones fit as without a cap."""
    small = BASE.with_columns(g=pl.lit(0))
    big = pl.concat([BASE] * 40).with_columns(g=pl.lit(1))
    df = pl.concat([small, big])
    d = len(X)

    def estimate(n: int) -> int:
        """The documented bound (``sdca_core::budget::linear_bytes``), one output, Newton's
        Hessian included (``d <= 512``)."""
        return 24 * n + 160 * n + 96 * (d + 1) + 16 * (d + 1) ** 2

    limit = estimate(small.height) + 100  # between the two sizes
    opts = {"loss": "hinge", "l2": 0.1, "max_memory": limit}
    out = (
        df.group_by("g")
        .agg(pl.col("y").sdca.fit(X, on_error="null", **opts).alias("m"))
        .sort("g")
        .unnest("m")
    )
    assert out["coef"].is_null().to_list() == [False, True]
    # The rows dominate the estimate; the status names them and both sizes.
    needed = estimate(big.height)
    assert out["status"][1] == (
        f'column "x0, x1": {big.height} rows: the fit would need about {needed / 1000:.1f} kB, more than '
        f"max_memory={limit:,} ({limit / 1000:.1f} kB); raise max_memory, or fit fewer rows per group "
        "(group_by), or one model over partitions with fit_cocoa"
    )
    with pytest.raises(ComputeError, match="raise max_memory, or fit fewer rows"):
        big.select(ps.fit("y", X, **opts))  # type: ignore[arg-type]


def test_null_policy_drop_matches_prefiltered_fit() -> None:
    holes = BASE.with_columns(x1=pl.Series([1.0, None, -1.0, 0.4, 0.2, -0.7]))
    dropped = holes.select(ps.fit("y", X, null_policy="drop", l2=0.1)).item()
    manual = holes.drop_nulls().select(ps.fit("y", X, l2=0.1)).item()
    assert dropped == manual
    rows = holes.select(ps.fit_rows("y", X, null_policy="drop", l2=0.1).alias("r")).unnest("r")
    assert rows["decision"].is_null().to_list() == [False, True, False, False, False, False]


# Memory that grows with the data is checked before it is allocated (issue 15, item 3). The
# default budget is half of the machine's memory; these cases run in a subprocess with
# POLARS_SDCA_MEMORY_BUDGET pinned to 100 MB, so that they refuse the same fits on any machine
# (before the check, the two reported cases aborted the Python process on allocation failure).
_MEMORY_SCRIPT = """
import json, sys
import numpy as np, polars as pl, polars_sdca as ps

SPARSE = pl.List(pl.Struct({"index": pl.UInt32, "value": pl.Float64}))
ONLY = sys.argv[1:]  # the cases to run (all when empty)
out = {}

def run(name, build):
    if ONLY and name not in ONLY:
        return
    try:
        out[name] = ("ok", repr(build()))
    except pl.exceptions.ComputeError as e:
        out[name] = ("error", str(e).splitlines()[0])

hashed = pl.DataFrame(
    {"y": [1, -1, 1], "f": [[{"index": 4_294_967_290, "value": 1.0}], [{"index": 0, "value": 1.0}], []]},
    schema={"y": pl.Int64, "f": SPARSE},
)
run("sparse index near 2^32", lambda: hashed.select(ps.fit("y", "f")))
small = hashed.with_columns(f=pl.Series([[{"index": 1, "value": 1.0}], [], []], dtype=SPARSE))
run("huge n_features", lambda: small.select(ps.fit("y", "f", n_features=2**40)))
ids = pl.DataFrame({"y": np.arange(100_000), "x": np.ones(100_000)})
run("an id column as the multiclass label", lambda: ids.select(ps.fit("y", ["x"], loss="multinomial")))
run("3,000 classes", lambda: ids.head(3_000).select(ps.fit("y", ["x"], loss="multiclass_hinge")))
wide = pl.DataFrame(
    {"y": np.arange(20), "v": np.ones((20, 100_000))}, schema_overrides={"v": pl.Array(pl.Float64, 100_000)}
)
run("wide dense Array", lambda: wide.select(ps.fit("y", "v", loss="multinomial")))
tokens = pl.DataFrame({"tag": np.arange(100_000), "x": np.ones(100_000), "s": np.arange(100_000) // 10})
run("an id column as the crf tag", lambda: tokens.select(ps.crf_fit("tag", ["x"], sequence="s")))
attrs = hashed.with_columns(s=pl.Series([0, 0, 1]))
run("crf attribute index near 2^32", lambda: attrs.select(ps.crf_fit("y", "f", sequence="s")))
if ONLY:
    print(json.dumps(out))
    sys.exit(0)
# on_error="null": the failing group gets a null model with the message; the others fit.
groups = pl.concat([ids.with_columns(g=pl.lit(0)), ids.head(50).with_columns(y=pl.col("y") % 2, g=pl.lit(1))])
fit = pl.col("y").sdca.fit(["x"], loss="multinomial", on_error="null")
models = groups.group_by("g").agg(fit.alias("m")).sort("g").unnest("m")
out["on_error null"] = ("ok", models["status"].to_list())
keyed = groups.select(ps.fit_groups("y", ["x"], by="g", loss="multinomial", on_error="null"))
keyed = keyed.unnest("y").sort("g")
out["fit_groups on_error null"] = ("ok", keyed["y"].struct.field("status").to_list())
print(json.dumps(out))
"""

BUDGET_100MB = "the default memory budget of 100.0 MB (pass max_memory= to set another)"
MEMORY_CASES: list[tuple[str, str]] = [
    (
        "sparse index near 2^32",
        'column "f": the largest sparse index is 4,294,967,290: the model would need about 412.3 GB, more '
        f"than {BUDGET_100MB}; pass n_features= (the width the model needs) or check the column: a hashed "
        "or corrupt index",
    ),
    (
        "huge n_features",
        'column "f": n_features=1,099,511,627,776: the model would need about 105.6 TB, more than '
        f"{BUDGET_100MB}; pass a smaller n_features=",
    ),
    (
        "an id column as the multiclass label",
        'column "y": 100,000 classes for 100,000 rows: the dual variables would need about 240.0 GB, more '
        f"than {BUDGET_100MB}; check the label column (an id column passed as a multiclass label?), or fit "
        "fewer rows per group",
    ),
    ("3,000 classes", 'column "y": 3,000 classes for 3,000 rows: the dual variables would need about 217.'),
    (
        "wide dense Array",
        'column "v": dense vectors of width 100,000 x 20 classes: the model would need about 968.3 MB, more '
        f"than {BUDGET_100MB}; check the vector column's width, or pass the features in sparse form",
    ),
    (
        "an id column as the crf tag",
        'column "tag": 100,000 tags for 100,000 tokens: the marginals would need about 7.2 PB, more than '
        f"{BUDGET_100MB}; check the tag column (an id column passed as the tag?), or fit fewer sequences "
        "per group",
    ),
    (
        "crf attribute index near 2^32",
        'column "f": 4,294,967,291 attributes x 2 tags: the weights would need about 154.6 GB, more than '
        f"{BUDGET_100MB}; pass n_features= or check the attribute column (the largest sparse index sets "
        "the width)",
    ),
]


def _run_memory_script(
    env: dict[str, str], only: tuple[str, ...] = (), limit_address_space: int | None = None
) -> dict[str, Any]:
    import json
    import os
    import subprocess
    import sys

    def limit() -> None:
        if limit_address_space is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (limit_address_space, limit_address_space))

    res = subprocess.run(
        [sys.executable, "-c", _MEMORY_SCRIPT, *only],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        preexec_fn=limit,  # no threads are started before the fork
        check=False,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return dict(json.loads(res.stdout))


@pytest.fixture(scope="module")
def memory_results() -> dict[str, Any]:
    return _run_memory_script({"POLARS_SDCA_MEMORY_BUDGET": "100000000"})


@pytest.mark.parametrize(("case", "message"), MEMORY_CASES, ids=[c[0] for c in MEMORY_CASES])
def test_memory_is_checked_before_it_is_allocated(
    memory_results: dict[str, Any], case: str, message: str
) -> None:
    kind, text = memory_results[case]
    assert kind == "error", text
    assert message in text, text


def test_memory_errors_stay_in_their_group(memory_results: dict[str, Any]) -> None:
    for case in ("on_error null", "fit_groups on_error null"):
        statuses = memory_results[case][1]
        assert "100,000 classes for 100,000 rows: the dual variables would need" in statuses[0]
        assert statuses[1] == "ok", statuses


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS")
def test_a_refused_allocation_is_an_error_not_an_abort() -> None:
    """With a budget that lets the fit through (the default budget trusts the machine's memory),
    an address-space limit makes the model's allocation fail: an error, not an abort (linear fits;
    the CRF's inner buffers are checked by its estimate only)."""
    cases = ("sparse index near 2^32", "an id column as the multiclass label")
    results = _run_memory_script({"POLARS_SDCA_MEMORY_BUDGET": str(10**15)}, cases, 16 * 2**30)
    kind, text = results["sparse index near 2^32"]
    assert kind == "error"
    assert "could not allocate 34.4 GB (34359738336 bytes): the process is out of memory" in text
    kind, text = results["an id column as the multiclass label"]
    assert "could not allocate 80.0 GB (80000000000 bytes)" in text
