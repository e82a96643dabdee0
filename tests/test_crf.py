"""The CRF expressions: crf_fit / crf_fit_rows / crf_predict against a brute-force reference."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

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


@pytest.mark.parametrize("length", [200_000, 1_000_000])
def test_a_long_sequence_is_a_legal_input(length: int) -> None:
    """One document as one sequence (issue 15, item 5): two tags, one feature.

    At 200,000 tokens the fit used to fail with "the crf fit's certificate (scores beyond f64
    precision) overflowed f64" (log-space forward-backward, plain sums over positions). The
    certificate identity ``P - D = gap`` must hold to a relative tolerance that does not depend
    on the length.
    """
    rng = np.random.default_rng(length)
    x = rng.random(length)
    tags = np.where(rng.random(length) < 0.2 + 0.6 * (x > 0.5), "B", "A")
    df = pl.DataFrame({"s": np.zeros(length, dtype=np.int64), "x": x, "t": tags})
    m = df.select(ps.crf_fit("t", ["x"], sequence="s", max_epochs=2)).item()
    assert m["status"].startswith("max_epochs")
    assert not m["converged"]
    assert (m["n_tokens"], m["n_sequences"]) == (length, 1)
    assert m["gap"] >= 0.0
    assert 0.0 < m["dual"] <= m["primal"]
    assert abs(m["primal"] - m["dual"] - m["gap"]) <= 1e-12 * (abs(m["primal"]) + abs(m["dual"]))
    pred = df.select(ps.crf_predict(m, ["x"], sequence="s")).to_series()
    assert pred.len() == length
    assert set(pred.unique().to_list()) <= {"A", "B"}


def random_tagging(n_sequences: int, k: int, seed: int = 0) -> pl.DataFrame:
    """Sequences of 5-25 tokens, 40 sparse attributes, ``k`` tags that follow the attributes."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 26, size=n_sequences)
    n = int(lengths.sum())
    attrs = np.stack([rng.permutation(40)[:3] for _ in range(n)])
    tags = (attrs[:, 0] + rng.integers(0, 2, size=n)) % k
    features = [[{"index": int(a), "value": 1.0} for a in sorted(row)] for row in attrs]
    return pl.DataFrame(
        {"s": np.repeat(np.arange(n_sequences), lengths), "f": features, "t": tags.astype(np.int64)}
    )


def test_threads_default_to_every_core_in_select_and_group_by() -> None:
    """A fit of more than 2^20 lattice cells uses Polars' thread count, alone in a ``select``
    and inside ``group_by`` (Polars calls a plugin of several columns one group at a time);
    small fits, and fits called from a user's thread, one thread."""
    df = random_tagging(1_000, 9)  # about 15,000 tokens x 81 label pairs
    opts = {"max_epochs": 2, "n_features": 40}
    alone = df.select(ps.crf_fit("t", "f", sequence="s", **opts)).item()
    assert alone["n_threads"] == pl.thread_pool_size()
    grouped = df.with_columns(g=pl.lit(0)).group_by("g").agg(ps.crf_fit("t", "f", sequence="s", **opts))
    assert grouped["t"].struct.field("n_threads").to_list() == [pl.thread_pool_size()]
    small = tiny_frame().select(ps.crf_fit("tag", ["x0", "x1"], sequence="sentence")).item()
    assert small["n_threads"] == 1
    with ThreadPoolExecutor(max_workers=1) as pool:
        elsewhere = pool.submit(lambda: df.select(ps.crf_fit("t", "f", sequence="s", **opts)).item()).result()
    assert elsewhere["n_threads"] == 1


def test_same_seed_and_threads_give_the_same_model() -> None:
    """The result depends on the seed and ``n_threads`` only; every thread count reaches the
    same optimum (within the two certified gaps). 2,100 sequences: blocks of 4 and 6 (a block
    holds at most n / 512 sequences)."""
    df = random_tagging(2_100, 4, seed=1)
    fits = {}
    for threads in (1, 2, 3):
        opts = {"n_threads": threads, "tol": 1e-4, "seed": 5, "n_features": 40}
        first = df.select(ps.crf_fit("t", "f", sequence="s", **opts)).item()
        again = df.select(ps.crf_fit("t", "f", sequence="s", **opts)).item()
        assert first == again
        assert first["converged"]
        assert first["n_threads"] == threads
        fits[threads] = first
    for threads in (2, 3):
        bound = fits[threads]["gap"] + fits[1]["gap"]
        assert abs(fits[threads]["primal"] - fits[1]["primal"]) <= bound


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
    with pytest.raises(ValueError, match="n_threads"):
        ps.crf_fit("t", ["x"], sequence="s", n_threads=0)


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
    with pytest.raises(
        ComputeError, match=r"would need about .*, more than max_memory=1,000 \(1\.0 kB\); raise"
    ):
        long.select(ps.crf_fit("t", ["x"], sequence="s", max_memory=1000))
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


# --------------------------------------------------------------------------------------
# order_by, token features, entity scores
# --------------------------------------------------------------------------------------


def positioned_frame() -> pl.DataFrame:
    """`tiny_frame` with a token position column (gaps between values) and a group column."""
    df = tiny_frame(4)
    position = np.concatenate([np.arange(n) * 10 + 5 for n in LENGTHS])
    return df.with_columns(pos=position, g=pl.col("sentence") % 2)


def test_order_by_equals_ordered_rows() -> None:
    ordered = positioned_frame()
    shuffled = ordered.sample(fraction=1.0, shuffle=True, seed=7)
    assert not shuffled["sentence"].equals(ordered["sentence"])
    opts = {"l2": 0.2, "tol": 1e-10}
    feats = ["x0", "x1"]
    a = ordered.select(ps.crf_fit("tag", feats, sequence="sentence", **opts)).item()
    b = shuffled.select(ps.crf_fit("tag", feats, sequence="sentence", order_by="pos", **opts)).item()
    assert a == b

    def per_row(df: pl.DataFrame, expr: pl.Expr) -> pl.DataFrame:
        """Outputs keyed by (sentence, pos): they must come back in the input's row order."""
        return df.select("sentence", "pos", expr.alias("out")).sort("sentence", "pos")

    rows = ps.crf_fit_rows("tag", feats, sequence="sentence", **opts)
    rows_by = ps.crf_fit_rows("tag", feats, sequence="sentence", order_by="pos", **opts)
    assert per_row(ordered, rows).equals(per_row(shuffled, rows_by))
    tags = per_row(ordered, ps.crf_predict(a, feats, sequence="sentence"))
    assert tags.equals(per_row(shuffled, ps.crf_predict(a, feats, sequence="sentence", order_by="pos")))
    # The shuffled frame without order_by is a different (invalid) input: sequences re-appear.
    with pytest.raises(ComputeError, match="re-appears"):
        shuffled.select(ps.crf_fit("tag", feats, sequence="sentence", **opts))


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_order_by_in_group_by_and_over(seed: int) -> None:
    """Also on Polars 1.x (the compatibility job), where a sort on several keys under .over()
    misplaced the rows (order_by now sorts on one struct key)."""
    ordered = positioned_frame()
    shuffled = ordered.sample(fraction=1.0, shuffle=True, seed=seed)
    opts = {"l2": 0.2, "tol": 1e-10}
    feats = ["x0", "x1"]

    def models(df: pl.DataFrame, **order: str) -> pl.DataFrame:
        fit = pl.col("tag").sdca.crf_fit(feats, sequence="sentence", **order, **opts)
        return df.group_by("g").agg(fit.alias("m")).sort("g")

    grouped = models(ordered)
    assert grouped.equals(models(shuffled, order_by="pos"))
    over = pl.col("tag").sdca.crf_fit_rows(feats, sequence="sentence", **opts).over("g")
    over_by = pl.col("tag").sdca.crf_fit_rows(feats, sequence="sentence", order_by="pos", **opts).over("g")
    keys = ["sentence", "pos"]
    assert (
        ordered.select(*keys, over.alias("r"))
        .sort(keys)
        .equals(shuffled.select(*keys, over_by.alias("r")).sort(keys))
    )
    # A model column is reordered with the rows it belongs to.
    predict = pl.col("m").sdca.crf_predict(feats, sequence="sentence").over("g")
    predict_by = pl.col("m").sdca.crf_predict(feats, sequence="sentence", order_by="pos").over("g")
    expected = ordered.join(grouped, on="g").select(*keys, predict.alias("p")).sort(keys)
    got = shuffled.join(grouped, on="g").select(*keys, predict_by.alias("p")).sort(keys)
    assert got.equals(expected)


def test_order_by_null_is_reported() -> None:
    df = positioned_frame().with_columns(pos=pl.when(pl.col("sentence") == 2).then(None).otherwise("pos"))
    with pytest.raises(ComputeError, match=r'column "sentence \(sorted by order_by pos\)", row \d+: null'):
        df.select(ps.crf_fit("tag", ["x0", "x1"], sequence="sentence", order_by="pos"))


def test_token_features_window_and_order() -> None:
    from polars_sdca.crf import attribute_dicts, token_features

    tokens = pl.DataFrame(
        {
            "sent": [0, 0, 0, 1],
            "i": [0, 1, 2, 0],
            "word": ["The", "EU", "rejects", "Go"],
            "pos": ["DT", "NNP", "VBZ", "VB"],
        }
    )
    opts = {"token": "word", "sequence": "sent", "order_by": "i", "extra": ["pos"], "window": 2}
    out, vocab = token_features(tokens, **opts)
    first = attribute_dicts(out, features="features", sequence="sent", vocabulary=vocab)[0]
    assert set(first[0]) == {
        "BOS",
        "w=The",
        "wl=the",
        "p3=the",
        "s3=the",
        "shape=Xx",
        "pos=DT",
        "wl[+1]=eu",
        "pos[+1]=NNP",
        "wl[+2]=rejects",
        "pos[+2]=VBZ",
    }
    assert {"wl[-2]=the", "pos[-1]=NNP", "EOS", "shape=x"} <= set(first[2])
    assert all(v == 1.0 for item in first for v in item.values())
    # Any row order with order_by gives the same attributes per token.
    shuffled, _ = token_features(tokens.reverse(), **opts)
    assert shuffled.reverse().equals(out)
    # A fixed vocabulary encodes new data; unknown attributes are dropped.
    new, same = token_features(tokens.head(1).with_columns(word=pl.lit("Zzz")), vocabulary=vocab, **opts)
    assert same is vocab
    names = {i: a for a, i in vocab.items()}
    assert {names[f["index"]] for f in new["features"][0]} == {"BOS", "EOS", "shape=Xx", "pos=DT"}
    # Options.
    bare, bare_vocab = token_features(
        tokens, token="word", sequence="sent", window=0, affixes=[], boundary=False, bias=True
    )
    assert set(bare_vocab) == {"bias"} | {f"w={w}" for w in tokens["word"]} | {
        f"wl={w.lower()}" for w in tokens["word"]
    } | {"shape=Xx", "shape=X", "shape=x"}
    assert bare["features"].list.len().to_list() == [4, 4, 4, 4]


def test_token_features_bad_input() -> None:
    from polars_sdca.crf import token_features

    tokens = pl.DataFrame({"s": [0], "word": ["a"], "w": ["b"]})
    with pytest.raises(ValueError, match=r"missing column\(s\) \['pos'\]"):
        token_features(tokens, token="word", sequence="s", extra=["pos"])
    with pytest.raises(ValueError, match="clashes with the attribute name 'w'"):
        token_features(tokens, token="word", sequence="s", extra=["w"])
    with pytest.raises(ValueError, match="unknown context attribute"):
        token_features(tokens, token="word", sequence="s", context=["pos"])
    with pytest.raises(ValueError, match="window must be an integer >= 0"):
        token_features(tokens, token="word", sequence="s", window=-1)
    with pytest.raises(ValueError, match="affixes must be positive integers"):
        token_features(tokens, token="word", sequence="s", affixes=[0])


def conlleval_entities(tags: list[list[str]]) -> set[tuple[int, int, int, str]]:
    """Entities by a direct reading of conlleval's rules, token by token (the reference)."""
    found = set()
    for s, seq in enumerate(tags):
        start, kind = None, None
        for t, tag in enumerate([*seq, "O"]):
            prefix, _, this = tag.partition("-")
            this = this or None
            begins = this is not None and (prefix == "B" or this != kind)
            if kind is not None and (this != kind or begins):
                found.add((s, start, t - 1, kind))
                kind = None
            if begins:
                start, kind = t, this
    return found


@pytest.mark.parametrize("seed", range(5))
def test_entity_scores_match_conlleval_rules(seed: int) -> None:
    from polars_sdca.crf import entity_scores

    rng = np.random.default_rng(seed)
    vocab = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    lengths = rng.integers(1, 8, size=30)
    truth = [[vocab[k] for k in rng.integers(0, 5, size=n)] for n in lengths]
    pred = [[t if rng.random() < 0.7 else vocab[rng.integers(0, 5)] for t in seq] for seq in truth]
    df = pl.DataFrame(
        {
            "s": np.repeat(np.arange(len(lengths)), lengths),
            "truth": [t for seq in truth for t in seq],
            "pred": [t for seq in pred for t in seq],
        }
    )
    scores = entity_scores(df, truth="truth", prediction="pred", sequence="s")
    true_set, pred_set = conlleval_entities(truth), conlleval_entities(pred)
    overall = scores.row(-1, named=True)
    assert overall["type"] == "overall"
    assert (overall["n_true"], overall["n_pred"], overall["n_correct"]) == (
        len(true_set),
        len(pred_set),
        len(true_set & pred_set),
    )
    assert overall["f1"] == pytest.approx(2 * len(true_set & pred_set) / (len(true_set) + len(pred_set)))
    assert scores["type"].to_list() == ["LOC", "PER", "overall"]
    # order_by: the same scores from shuffled rows.
    shuffled = df.with_row_index("i").sample(fraction=1.0, shuffle=True, seed=seed)
    again = entity_scores(shuffled, truth="truth", prediction="pred", sequence="s", order_by="i")
    assert again.equals(scores)
