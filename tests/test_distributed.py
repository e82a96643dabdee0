"""polars_sdca.distributed: CoCoA+ (fit_cocoa) and sharded per-group fits (map_shards).

References: the single-machine fit (certified by its own duality gap) for CoCoA+, and the
single-process ``group_by().agg`` for the sharded fits (they must be equal exactly). Ray tests
run on a local cluster of 2 CPUs started here; they are skipped when Ray is not installed (the
compatibility job's venv).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import polars_sdca as ps
from polars_sdca.distributed import fit_cocoa, map_shards


@pytest.fixture(scope="module")
def ray_cluster() -> Any:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    # The queries below live in this test module, which Ray's workers cannot import: ship them
    # by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def tokens(conll_tokens: tuple[pl.DataFrame, int]) -> tuple[pl.DataFrame, int]:
    frame, d = conll_tokens
    return frame.select(pl.col("is_entity").alias("y"), "features"), d


SPARSE = {"loss": "logistic", "l2": 1e-4, "fit_intercept": False}


def _model(frame: pl.DataFrame) -> dict[str, Any]:
    return frame.row(0, named=True)[frame.columns[0]]


def _optimum(df: pl.DataFrame, d: int, **opts: Any) -> float:
    ref = _model(
        df.select(ps.fit("y", "features", n_features=d, tol=1e-12, solver="sdca", max_epochs=5000, **opts))
    )
    assert ref["gap"] <= 1e-11 * ref["primal"]
    return ref["primal"]


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_cocoa_reaches_the_single_machine_optimum_on_conll(tokens: tuple[pl.DataFrame, int], k: int) -> None:
    df, d = tokens
    p_star = _optimum(df, d, **SPARSE)
    m = _model(
        fit_cocoa(
            df,
            "y",
            "features",
            n_partitions=k,
            tol=1e-7,
            max_rounds=2000,
            n_features=d,
            backend="threads",
            **SPARSE,
        )
    )
    assert m["converged"]
    assert m["status"] == "ok"
    assert m["solver"] == "cocoa+"
    assert abs(m["primal"] - p_star) <= 1e-6 * p_star
    # The certificate bounds the true suboptimality.
    assert m["gap"] >= m["primal"] - p_star - 1e-15
    assert m["gap"] <= 1e-7 * m["primal"]
    assert m["epochs"] == len(m["gap_trace"])
    assert m["n_rows"] == df.height


@pytest.mark.slow
def test_averaging_and_local_epochs_reach_the_optimum_too(tokens: tuple[pl.DataFrame, int]) -> None:
    df, d = tokens
    p_star = _optimum(df, d, **SPARSE)
    for aggregation, h in [("average", 1), ("add", 3)]:
        m = _model(
            fit_cocoa(
                df,
                "y",
                "features",
                n_partitions=4,
                local_epochs=h,
                aggregation=aggregation,
                tol=1e-7,
                max_rounds=2000,
                n_features=d,
                backend="threads",
                **SPARSE,
            )
        )
        assert m["converged"]
        assert m["solver"] == ("cocoa+" if aggregation == "add" else "cocoa")
        assert abs(m["primal"] - p_star) <= 1e-6 * p_star
        assert m["epochs"] == h * len(m["gap_trace"])


def test_one_partition_is_sdca_and_the_model_works_with_predict(breast_cancer: pl.DataFrame) -> None:
    feats = [c for c in breast_cancer.columns if c.startswith("f")]
    opts = {"loss": "logistic", "l2": 1e-2, "tol": 1e-10}
    single = breast_cancer.select(ps.fit("y", feats, solver="sdca", **opts))
    cocoa = fit_cocoa(breast_cancer, "y", feats, n_partitions=1, backend="threads", **opts)
    assert cocoa.schema == single.schema
    s, c = _model(single), _model(cocoa)
    assert abs(s["primal"] - c["primal"]) <= 1e-9 * s["primal"]
    # One partition, one local pass: a round is an SDCA epoch (different orders, same rate).
    assert c["epochs"] <= s["epochs"] + 3
    assert c["classes"] == s["classes"]
    np.testing.assert_allclose(c["coef"], s["coef"], atol=1e-4)
    pred = breast_cancer.select(
        a=ps.predict(cocoa, feats, kind="class"), b=ps.predict(single, feats, kind="class")
    )
    assert (pred["a"] == pred["b"]).mean() > 0.99


def test_regression_with_intercept_weights_and_elastic_net(breast_cancer: pl.DataFrame) -> None:
    feats = [c for c in breast_cancer.columns if c.startswith("f")][:10]
    df = breast_cancer.with_columns(t=pl.col("f10") * 2 + 1, w=pl.int_range(pl.len()) % 3 * 0.5)
    opts = {"loss": "squared", "l2": 1e-2, "l1": 1e-3, "weights": "w", "tol": 1e-8}
    s = _model(df.select(ps.fit("t", feats, solver="sdca", **opts)))
    # Correlated dense features: CoCoA+ needs many rounds here (the sigma' = K damping).
    c = _model(fit_cocoa(df, "t", feats, n_partitions=3, max_rounds=5000, backend="threads", **opts))
    assert c["converged"]
    assert c["classes"] is None
    assert abs(s["primal"] - c["primal"]) <= 2e-8 * s["primal"]
    assert c["gap"] <= 1e-8 * c["primal"]
    assert c["intercept"] == pytest.approx(s["intercept"], abs=1e-3)


def test_same_seed_same_model(breast_cancer: pl.DataFrame) -> None:
    feats = [c for c in breast_cancer.columns if c.startswith("f")]
    runs = [
        fit_cocoa(breast_cancer, "y", feats, n_partitions=3, l2=1e-3, tol=1e-6, backend="threads", seed=s)
        for s in (5, 5, 6)
    ]
    assert runs[0].equals(runs[1])
    assert not runs[0].equals(runs[2])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_partitions": 0}, ValueError, "n_partitions must be an integer >= 1"),
        ({"local_epochs": 1.5}, ValueError, "local_epochs must be an integer"),
        ({"aggregation": "sum"}, ValueError, "aggregation must be 'add' or 'average'"),
        ({"backend": "spark"}, ValueError, "backend must be one of"),
        ({"l2": 0.0, "l1": 0.1}, ValueError, "fit_cocoa needs l2 > 0"),
        ({"solver": "pdprox"}, TypeError, "fit_cocoa does not take \\['solver'\\]"),
        ({"loss": "multinomial"}, ValueError, "does not support the multiclass loss"),
        ({"loss": "nope"}, ValueError, "loss"),
        ({"n_partitions": 500}, ValueError, "cannot fill 500 partitions"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    df = pl.DataFrame({"y": [0, 1] * 20, "x": np.linspace(-1, 1, 40)})
    with pytest.raises(error, match=match):
        fit_cocoa(df, "y", "x", **{"backend": "threads", **kwargs})


def test_bad_data_names_the_column() -> None:
    df = pl.DataFrame({"y": [0, 1, None, 1] * 5, "x": np.linspace(-1, 1, 20)})
    with pytest.raises(ValueError, match=r'column "y".*null'):
        fit_cocoa(df, "y", "x", backend="threads")
    df = pl.DataFrame({"y": [0, 1, 2, 1] * 5, "x": np.linspace(-1, 1, 20)})
    with pytest.raises(ValueError, match=r'column "y".*label 2'):
        fit_cocoa(df, "y", "x", backend="threads")


# --- Ray ---------------------------------------------------------------------------------------


def test_ray_backend_equals_threads(ray_cluster: Any, breast_cancer: pl.DataFrame) -> None:
    feats = [c for c in breast_cancer.columns if c.startswith("f")]
    opts = {"n_partitions": 3, "l2": 1e-3, "tol": 1e-8}
    on_ray = fit_cocoa(breast_cancer, "y", feats, backend="ray", **opts)
    on_threads = fit_cocoa(breast_cancer, "y", feats, backend="threads", **opts)
    assert on_ray.equals(on_threads)


@pytest.mark.slow
def test_a_killed_actor_is_recreated_and_the_fit_converges(
    ray_cluster: Any, tokens: tuple[pl.DataFrame, int]
) -> None:
    df, d = tokens
    p_star = _optimum(df, d, **SPARSE)
    killed: list[int] = []

    def kill_one(info: dict[str, Any]) -> None:
        if info["round"] == 3 and not killed:
            ray_cluster.kill(info["workers"][1], no_restart=True)
            killed.append(info["round"])

    m = _model(
        fit_cocoa(
            df,
            "y",
            "features",
            n_partitions=4,
            tol=1e-7,
            max_rounds=2000,
            n_features=d,
            backend="ray",
            on_round=kill_one,
            **SPARSE,
        )
    )
    assert killed == [3]
    assert m["converged"]
    assert abs(m["primal"] - p_star) <= 1e-6 * p_star
    assert m["gap"] >= m["primal"] - p_star - 1e-15
    # The lost partition restarted from zero duals: the gap went back up before converging.
    trace = m["gap_trace"]
    assert max(trace[4:]) > trace[3]


def _group_frame(groups: int, rows: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = groups * rows
    x = rng.normal(size=(n, 2))
    g = np.repeat(np.arange(groups), rows)
    w = rng.normal(size=(groups, 2))[g]
    y = ((x * w).sum(axis=1) + 0.5 * rng.normal(size=n) > 0).astype(np.int64)
    return pl.DataFrame({"g": g, "y": y, "x1": x[:, 0], "x2": x[:, 1]})


def _per_group(lf: pl.LazyFrame) -> pl.LazyFrame:
    return lf.group_by("g").agg(
        pl.col("y").sdca.fit(["x1", "x2"], l2=1e-2, tol=1e-8, on_error="null"), n=pl.len()
    )


@pytest.mark.slow
def test_map_shards_over_10000_groups_equals_group_by(ray_cluster: Any) -> None:
    df = _group_frame(10_000, 12)
    single = _per_group(df.lazy()).collect().sort("g")
    out = map_shards(df, by="g", query=_per_group, n_shards=4, backend="ray")
    assert out["shard_error"].null_count() == out.height
    assert out.drop("shard_error").equals(single)


def test_map_shards_sources_and_output_files(tmp_path: Path) -> None:
    df = _group_frame(60, 10)
    single = _per_group(df.lazy()).collect().sort("g")
    df.write_parquet(tmp_path / "data.parquet")
    for source in (df, df.lazy(), tmp_path / "data.parquet", [str(tmp_path / "data.parquet")]):
        out = map_shards(source, by="g", query=_per_group, n_shards=3, backend="threads", on_error="raise")
        assert out.equals(single)
    paths = map_shards(df, by=["g"], query=_per_group, n_shards=3, backend="threads", output=tmp_path / "out")
    assert isinstance(paths, list)
    assert len(paths) == 3
    assert pl.concat([pl.read_parquet(p) for p in paths]).sort("g").equals(single)


def _fail_once(marker_dir: str) -> Any:
    """A query that fails on the first attempt of each shard (a flaky worker)."""

    def query(lf: pl.LazyFrame) -> pl.DataFrame:
        out = _per_group(lf).collect()
        marker = Path(marker_dir) / f"seen-{out['g'].min()}"
        if not marker.exists():
            marker.touch()
            msg = "transient failure"
            raise RuntimeError(msg)
        return out

    return query


def _fail_on_group(bad: int) -> Any:
    def query(lf: pl.LazyFrame) -> pl.DataFrame:
        out = _per_group(lf).collect()
        if bad in out["g"].to_list():
            msg = f"group {bad} cannot be fitted here"
            raise RuntimeError(msg)
        return out

    return query


@pytest.mark.parametrize("backend", ["threads", "ray"])
def test_failed_shards_are_retried_and_failed_groups_come_back_as_data(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "ray":
        request.getfixturevalue("ray_cluster")
    df = _group_frame(40, 10)
    single = _per_group(df.lazy()).collect().sort("g")
    retried = map_shards(
        df, by="g", query=_fail_once(str(tmp_path)), n_shards=3, backend=backend, max_retries=1
    )
    assert retried.drop("shard_error").equals(single)
    out = map_shards(df, by="g", query=_fail_on_group(7), n_shards=3, backend=backend, max_retries=1)
    assert out.height == single.height
    assert out["g"].to_list() == single["g"].to_list()
    failed = out.filter(pl.col("shard_error").is_not_null())
    assert 7 in failed["g"].to_list()
    assert failed["y"].null_count() == failed.height
    assert failed["shard_error"].str.contains("group 7 cannot be fitted").all()
    healthy = out.filter(pl.col("shard_error").is_null()).drop("shard_error")
    assert healthy.equals(single.filter(pl.col("g").is_in(healthy["g"].implode())))
    with pytest.raises(RuntimeError, match=r"shard .* failed"):
        map_shards(
            df, by="g", query=_fail_on_group(7), n_shards=3, backend=backend, max_retries=0, on_error="raise"
        )


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_shards": 0}, ValueError, "n_shards must be an integer >= 1"),
        ({"by": 3}, TypeError, "by must be a column name"),
        ({"on_error": "ignore"}, ValueError, "on_error must be"),
        ({"query": "select"}, TypeError, "query must be a callable"),
        ({"backend": "dask"}, ValueError, "backend must be one of"),
    ],
)
def test_map_shards_bad_arguments(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    args = {"by": "g", "query": _per_group, "n_shards": 2, "backend": "threads", **kwargs}
    with pytest.raises(error, match=match):
        map_shards(_group_frame(4, 5), **args)
