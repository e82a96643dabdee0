"""The CRF expressions: crf_fit / crf_fit_rows / crf_predict against a brute-force reference."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import polars as pl
import pytest
from polars.exceptions import ComputeError
from scipy.optimize import minimize
from scipy.special import logsumexp

import polars_sdca as ps

K, A = 3, 2
LENGTHS = [1, 2, 3, 2, 1, 3]


def tiny_frame(seed: int = 0) -> pl.DataFrame:
    """Six short sequences (lengths 1, 2, 3), two dense attributes, three string tags."""
    rng = np.random.default_rng(seed)
    seq = np.repeat(np.arange(len(LENGTHS)), LENGTHS)
    n = len(seq)
    x = rng.normal(size=(n, A))
    tags = rng.integers(0, K, size=n)
    return pl.DataFrame(
        {
            "sentence": seq,
            "x0": x[:, 0],
            "x1": x[:, 1],
            "tag": [f"T{t}" for t in tags],
        }
    )


def phi(x: np.ndarray, y: tuple[int, ...]) -> np.ndarray:
    """Feature map in the order [emission K x A | bias | start | end | transition K x K]."""
    f = np.zeros(K * A + 3 * K + K * K)
    for t, label in enumerate(y):
        f[label * A : (label + 1) * A] += x[t]
        f[K * A + label] += 1.0
    f[K * A + K + y[0]] += 1.0
    f[K * A + 2 * K + y[-1]] += 1.0
    for a, b in itertools.pairwise(y):
        f[K * A + 3 * K + a * K + b] += 1.0
    return f


def brute_force(df: pl.DataFrame, l2: float) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """The primal and its gradient by enumerating every labelling of every sequence."""
    labels = sorted(set(df["tag"]))
    blocks = []
    for _, g in df.group_by("sentence", maintain_order=True):
        x = g.select("x0", "x1").to_numpy()
        y = tuple(labels.index(t) for t in g["tag"])
        paths = list(itertools.product(range(K), repeat=len(y)))
        blocks.append((np.array([phi(x, p) for p in paths]), phi(x, y)))
    n = len(blocks)

    def primal(w: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = 0.5 * l2 * w @ w, l2 * w
        for big, truth in blocks:
            scores = big @ w
            log_z = logsumexp(scores)
            value += (log_z - truth @ w) / n
            grad = grad + (np.exp(scores - log_z) @ big - truth) / n
        return value, grad

    return primal


def flatten(m: dict) -> np.ndarray:
    return np.concatenate(
        [
            np.ravel(m["emission"]),
            m["bias"],
            m["start"],
            m["end"],
            np.ravel(m["transition"]),
        ]
    )


def test_fit_matches_brute_force_lbfgs() -> None:
    df = tiny_frame()
    l2 = 0.3
    m = df.select(
        ps.crf_fit("tag", ["x0", "x1"], sequence="sentence", l2=l2, tol=1e-12, max_epochs=2000)
    ).item()
    assert m["status"] == "ok"
    assert m["converged"]
    assert (m["n_sequences"], m["n_tokens"], m["n_attributes"]) == (6, 12, 2)
    assert m["labels"] == ["T0", "T1", "T2"]
    assert np.shape(m["emission"]) == (K, A)
    assert np.shape(m["transition"]) == (K, K)
    primal = brute_force(df, l2)
    ref = minimize(
        primal,
        np.zeros(K * A + 3 * K + K * K),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000},
    )
    ours = flatten(m)
    # The returned weights evaluate (brute force) to the reported primal: the layout is right.
    assert primal(ours)[0] == pytest.approx(m["primal"], rel=1e-10)
    # The optimum matches the independent L-BFGS reference.
    assert m["primal"] == pytest.approx(ref.fun, rel=1e-6)
    assert m["primal"] - m["dual"] == pytest.approx(m["gap"], abs=1e-10)
    assert 0.0 <= m["gap"] <= 1e-12 * m["primal"] * 10
    np.testing.assert_allclose(ours, ref.x, atol=1e-4)
    assert m["l2"] == l2


def test_default_l2_is_one_over_n() -> None:
    m = tiny_frame().select(ps.crf_fit("tag", ["x0", "x1"], sequence="sentence")).item()
    assert m["l2"] == pytest.approx(1 / len(LENGTHS))


def test_fit_rows_marginals_gap_and_predict() -> None:
    df = tiny_frame(1)
    opts = {"l2": 0.1, "tol": 1e-10}
    m = df.select(ps.crf_fit("tag", ["x0", "x1"], sequence="sentence", **opts).alias("m"))
    rows = df.select(ps.crf_fit_rows("tag", ["x0", "x1"], sequence="sentence", **opts).alias("r")).unnest("r")
    assert rows.schema == pl.Schema(
        {"prediction": pl.String, "marginals": pl.List(pl.Float64), "gap": pl.Float64}
    )
    marg = np.array(rows["marginals"].to_list())
    np.testing.assert_allclose(marg.sum(axis=1), 1.0, atol=1e-12)
    # One gap per sequence; their mean is the model's gap.
    per_seq = rows.with_columns(df["sentence"]).group_by("sentence").agg(pl.col("gap").first())["gap"]
    assert per_seq.mean() == pytest.approx(m["m"].struct.field("gap").item(), rel=1e-9, abs=1e-15)
    # Viterbi of crf_predict (model object and model column) equals crf_fit_rows.
    pred = df.select(ps.crf_predict(m, ["x0", "x1"], sequence="sentence")).to_series()
    assert pred.to_list() == rows["prediction"].to_list()
    joined = df.join(m, how="cross").select(pl.col("m").sdca.crf_predict(["x0", "x1"], sequence="sentence"))
    assert joined.to_series().to_list() == rows["prediction"].to_list()
    as_dict = df.select(ps.crf_predict(m.item(), ["x0", "x1"], sequence="sentence")).to_series()
    assert as_dict.to_list() == rows["prediction"].to_list()
    # Brute-force marginals of the first two-token sequence.
    model = m.item()
    ours = flatten(model)
    g = df.filter(pl.col("sentence") == 1)
    x = g.select("x0", "x1").to_numpy()
    paths = list(itertools.product(range(K), repeat=2))
    s = np.array([phi(x, p) @ ours for p in paths])
    p = np.exp(s - logsumexp(s))
    first = np.array([sum(pi for pi, path in zip(p, paths, strict=True) if path[0] == k) for k in range(K)])
    np.testing.assert_allclose(marg[1], first, atol=1e-12)
    best = paths[int(np.argmax(s))]
    assert rows["prediction"][1:3].to_list() == [model["labels"][k] for k in best]


@pytest.mark.parametrize(
    ("tags", "dtype"), [([3, 7, 3, 7, 7], pl.Int16), ([True, False, True, False, True], pl.Boolean)]
)
def test_tags_round_trip_in_their_dtype(tags: list, dtype: pl.DataType) -> None:
    df = pl.DataFrame(
        {"s": [0, 1, 1, 2, 2], "x": [1.0, -1.0, 1.0, 1.0, -1.0], "t": pl.Series(tags, dtype=dtype)}
    )
    m = df.select(pl.col("t").sdca.crf_fit(["x"], sequence="s", l2=0.01).alias("m"))
    assert m.schema["m"].to_schema()["labels"] == pl.List(dtype)
    assert m["m"].struct.field("labels").item().to_list() == sorted(set(tags))
    rows = df.select(pl.col("t").sdca.crf_fit_rows(["x"], sequence="s", l2=0.01)).unnest("t")
    assert rows["prediction"].dtype == dtype
    pred = df.select(ps.crf_predict(m, ["x"], sequence="s")).to_series()
    assert pred.dtype == dtype
    assert pred.to_list() == rows["prediction"].to_list()


def test_lengths_one_and_two() -> None:
    one = pl.DataFrame({"s": [0, 1, 2, 3], "x": [1.0, -1.0, 1.0, -1.0], "t": ["a", "b", "a", "b"]})
    m = one.select(ps.crf_fit("t", ["x"], sequence="s", l2=0.1, tol=1e-10)).item()
    assert m["converged"]
    assert m["n_sequences"] == 4
    assert one.select(ps.crf_predict(m, ["x"], sequence="s")).to_series().to_list() == ["a", "b", "a", "b"]
    two = pl.DataFrame({"s": ["u", "u", "v", "v"], "x": [1.0, -1.0, -1.0, 1.0], "t": ["a", "b", "b", "a"]})
    m = two.select(ps.crf_fit("t", ["x"], sequence="s", l2=0.1, tol=1e-10)).item()
    assert m["converged"]
    assert m["n_sequences"] == 2
    assert two.select(ps.crf_predict(m, ["x"], sequence="s")).to_series().to_list() == ["a", "b", "b", "a"]


def test_group_by_equals_separate_fits() -> None:
    a, b = tiny_frame(2), tiny_frame(3)
    df = pl.concat([a.with_columns(g=pl.lit("a")), b.with_columns(g=pl.lit("b"))])
    opts = {"l2": 0.2, "tol": 1e-10}
    grouped = df.group_by("g", maintain_order=True).agg(
        pl.col("tag").sdca.crf_fit(["x0", "x1"], sequence="sentence", **opts).alias("m")
    )
    for key, part in (("a", a), ("b", b)):
        alone = part.select(ps.crf_fit("tag", ["x0", "x1"], sequence="sentence", **opts)).item()
        together = grouped.filter(pl.col("g") == key)["m"].item()
        assert together["primal"] == alone["primal"]
        assert together["emission"] == alone["emission"]
    # Per-group models joined back predict each group with its own model (sequence ids repeat
    # across groups, so predict per group with `.over`).
    joined = df.join(grouped, on="g")
    pred = joined.select(pl.col("m").sdca.crf_predict(["x0", "x1"], sequence="sentence").over("g"))["m"]
    # With ids unique across groups, one call over the whole frame gives the same tags.
    unique = joined.with_columns(pl.col("sentence") + pl.when(pl.col("g") == "b").then(100).otherwise(0))
    whole = unique.select(pl.col("m").sdca.crf_predict(["x0", "x1"], sequence="sentence"))["m"]
    assert whole.to_list() == pred.to_list()
    rows = df.select(
        pl.col("tag")
        .sdca.crf_fit_rows(["x0", "x1"], sequence="sentence", **opts)
        .over("g")
        .struct.field("prediction")
    ).to_series()
    assert pred.to_list() == rows.to_list()


def test_null_model_group_predicts_null() -> None:
    df = pl.DataFrame(
        {
            "g": ["a", "a", "a", "b", "b"],
            "s": [0, 0, 0, 1, 2],
            "x": [1.0, -1.0, 1.0, 1.0, -1.0],
            "t": [1, 2, 1, 1, 2],
        }
    )
    models = df.group_by("g", maintain_order=True).agg(
        pl.col("t").sdca.crf_fit(["x"], sequence="s", max_sequence_length=2, on_error="null").alias("m")
    )
    assert models["m"].struct.field("status")[0].startswith('sequence column "s"')
    assert models["m"].struct.field("status")[1] == "ok"
    pred = df.join(models, on="g").select(pl.col("m").sdca.crf_predict(["x"], sequence="s").over("g"))["m"]
    assert pred.dtype == pl.Int64
    assert pred.to_list()[:3] == [None, None, None]
    assert pred.to_list()[3:] == [1, 2]
    rows = df.select(
        pl.col("t").sdca.crf_fit_rows(["x"], sequence="s", max_sequence_length=2, on_error="null").over("g")
    )
    assert rows.unnest("t")["prediction"].to_list()[:3] == [None, None, None]


def test_sparse_conll_chunk_tags() -> None:
    from polars_sdca import datasets

    tokens = datasets.load_conll2003("train").head(2000)
    frame, vocab = datasets.conll_token_features(tokens)
    m = frame.select(ps.crf_fit("chunk", "features", sequence="sentence", tol=1e-3)).item()
    assert m["status"] == "ok"
    assert 0 <= m["gap"] <= 1e-3 * m["primal"]
    assert m["n_attributes"] == len(vocab)
    assert m["n_tokens"] == 2000
    pred = frame.select(ps.crf_predict(m, "features", sequence="sentence")).to_series()
    assert (pred == frame["chunk"]).mean() > 0.9
    # Unknown attribute indices (beyond the model's width) are ignored.
    shifted = frame.with_columns(
        pl.col("features").list.concat(
            pl.concat_list(pl.struct(index=pl.lit(10**6, pl.UInt32), value=pl.lit(1.0)))
        )
    )
    again = shifted.select(ps.crf_predict(m, "features", sequence="sentence")).to_series()
    assert again.to_list() == pred.to_list()


def test_bad_options_raise_at_build_time() -> None:
    with pytest.raises(TypeError, match="unknown option"):
        ps.crf_fit("t", ["x"], sequence="s", lambda_=1.0)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="l2"):
        ps.crf_fit("t", ["x"], sequence="s", l2=0.0)
    with pytest.raises(ValueError, match="l2"):
        ps.crf_fit("t", ["x"], sequence="s", l2=-1.0)
    with pytest.raises(ValueError, match="sampling"):
        ps.crf_fit("t", ["x"], sequence="s", sampling="max")  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match="null_policy"):
        ps.crf_fit("t", ["x"], sequence="s", null_policy="drop")  # type: ignore[typeddict-item]
    with pytest.raises(TypeError, match="max_epochs"):
        ps.crf_fit("t", ["x"], sequence="s", max_epochs=1.5)  # type: ignore[typeddict-item]


def test_bad_data_raise_naming_column_and_row() -> None:
    df = pl.DataFrame({"s": [0, 0, 1, 1, 0], "x": [1.0, 0.0, 1.0, 0.0, 1.0], "t": ["A", "B", "A", "B", "A"]})
    with pytest.raises(ComputeError, match=r'column "s", row 4: sequence "0" re-appears'):
        df.select(ps.crf_fit("t", ["x"], sequence="s"))
    nulls = pl.DataFrame({"s": [0, 0, 1], "x": [1.0, 0.0, 1.0], "t": ["A", None, "B"]})
    with pytest.raises(ComputeError, match=r'column "t", row 1: null'):
        nulls.select(ps.crf_fit("t", ["x"], sequence="s"))
    long = pl.DataFrame({"s": [0, 0, 0, 1], "x": [1.0, 0.0, 1.0, 0.0], "t": ["A", "B", "A", "B"]})
    with pytest.raises(
        ComputeError, match=r'"s".*sequence 0 \(rows 0..3\) has length 3 > max_sequence_length 2'
    ):
        long.select(ps.crf_fit("t", ["x"], sequence="s", max_sequence_length=2))
    floats = long.with_columns(pl.col("x").alias("t"))
    with pytest.raises(ComputeError, match="crf tags must be strings, integers or booleans"):
        floats.select(ps.crf_fit("t", ["x"], sequence="s"))
    m = long.select(ps.crf_fit("t", ["x"], sequence="s"))
    wide = long.with_columns(y=pl.col("x"))
    with pytest.raises(
        ComputeError, match=r'column "x, y": dense features have 2 columns but the crf model was fitted on 1'
    ):
        wide.select(ps.crf_predict(m, ["x", "y"], sequence="s"))
    # on_error="null": a failed group yields a null model with its reason.
    out = long.select(ps.crf_fit("t", ["x"], sequence="s", max_sequence_length=2, on_error="null")).item()
    assert out["emission"] is None
    assert not out["converged"]
    assert "max_sequence_length" in out["status"]
