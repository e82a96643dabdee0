"""fit_cv: K-fold cross-validation of a path per group, against a hand-written fold loop."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_sdca as ps


def _frame(n: int, d: int, *, seed: int, classification: bool) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = np.zeros(d)
    w[:2] = [1.5, -1.0]
    t = X @ w + 0.8 * rng.standard_normal(n)
    y = np.where(t > 0, 1, 0) if classification else t
    return pl.DataFrame(
        {f"f{j}": X[:, j] for j in range(d)}
        | {"y": y, "fold": rng.integers(0, 4, n) * 10, "g": rng.integers(0, 3, n)}
    )


def _features(df: pl.DataFrame) -> list[str]:
    return [c for c in df.columns if c.startswith("f") and c != "fold"]


def _score(scoring: str, a: np.ndarray, y: np.ndarray) -> float:
    pm = np.where(y > 0, 1.0, -1.0)
    if scoring == "log_loss":
        return float(np.mean(np.logaddexp(0.0, -pm * a)))
    if scoring == "accuracy":
        return float(np.mean((a > 0) == (pm > 0)))
    if scoring == "hinge":
        return float(np.mean(np.maximum(0.0, 1 - pm * a)))
    if scoring == "squared_error":
        return float(np.mean((a - y) ** 2))
    return float(np.mean(np.abs(a - y)))


@pytest.mark.parametrize(
    ("loss", "scoring", "classification"),
    [
        ("logistic", "log_loss", True),
        ("logistic", "accuracy", True),
        ("smooth_hinge", "hinge", True),
        ("squared", "squared_error", False),
        ("squared", "absolute_error", False),
    ],
)
def test_cv_scores_equal_a_hand_written_fold_loop(loss: str, scoring: str, classification: bool) -> None:
    df = _frame(160, 6, seed=1, classification=classification)
    feats = _features(df)
    opts = {"loss": loss, "l2": 1e-3, "n_l1": 6, "l1_min_ratio": 1e-2, "tol": 1e-10}
    cv = df.select(ps.fit_cv("y", feats, fold_column="fold", scoring=scoring, **opts)).item()
    values = cv["values"]
    assert values == sorted(values, reverse=True)
    assert cv["scoring"] == scoring
    X, y = df.select(feats).to_numpy(), df["y"].to_numpy()
    by_fold = []
    for f in sorted(df["fold"].unique()):
        train = df.filter(pl.col("fold") != f)
        path = train.select(ps.fit_path("y", feats, **{**opts, "l1": values})).item()
        test = (df["fold"] == f).to_numpy()
        by_fold.append(
            [_score(scoring, X[test] @ np.array(m["coef"]) + m["intercept"], y[test]) for m in path]
        )
    want = np.array(by_fold)
    assert np.allclose(cv["fold_scores"], want, rtol=1e-12, atol=1e-14)
    assert np.allclose(cv["mean"], want.mean(0), rtol=1e-12, atol=1e-14)
    assert np.allclose(cv["se"], want.std(0, ddof=1) / 2.0, rtol=1e-10, atol=1e-14)
    better = np.argmax if scoring == "accuracy" else np.argmin
    assert cv["best"] == values[int(better(want.mean(0)))]
    assert cv["chosen"] == cv["best"]
    assert cv["model"]["l1"] == cv["chosen"]
    refit = df.select(ps.fit("y", feats, loss=loss, l2=1e-3, l1=cv["chosen"], tol=1e-10)).item()
    assert abs(refit["primal"] - cv["model"]["primal"]) <= refit["gap"] + cv["model"]["gap"]


def test_one_standard_error_rule_picks_a_larger_penalty() -> None:
    df = _frame(200, 10, seed=2, classification=False)
    feats = _features(df)
    opts = {"loss": "squared", "l2": 0.0, "n_l1": 12, "folds": 5, "tol": 1e-8}
    best = df.select(ps.fit_cv("y", feats, **opts)).item()
    one_se = df.select(ps.fit_cv("y", feats, select="one_standard_error", **opts)).item()
    assert best["mean"] == one_se["mean"]
    assert best["best"] == one_se["best"]
    k = one_se["values"].index(one_se["chosen"])
    b = one_se["values"].index(one_se["best"])
    assert k <= b
    assert one_se["mean"][k] <= one_se["mean"][b] + one_se["se"][b]
    assert all(m > one_se["mean"][b] + one_se["se"][b] for m in one_se["mean"][:k])


def test_drawn_folds_are_seeded_and_stratified() -> None:
    df = _frame(150, 4, seed=3, classification=True)
    feats = _features(df)
    run = lambda seed: df.select(ps.fit_cv("y", feats, l2=1e-2, n_l1=4, folds=3, seed=seed)).item()  # noqa: E731
    a, b, c = run(0), run(0), run(1)
    assert a == b
    assert a["fold_scores"] != c["fold_scores"]


def test_groups_equal_per_group_calls() -> None:
    df = _frame(300, 5, seed=4, classification=True)
    feats = _features(df)
    opts = {"l2": 1e-3, "n_l1": 5, "folds": 3, "tol": 1e-8}
    agg = df.group_by("g").agg(pl.col("y").sdca.fit_cv(feats, **opts).alias("y")).sort("g")
    grouped = df.select(ps.fit_groups("y", feats, by="g", kind="cv", **opts)).unnest("y").sort("g")
    assert_frame_equal(agg, grouped)
    for g, cv in zip(agg["g"], agg["y"], strict=False):
        alone = df.filter(pl.col("g") == g).select(ps.fit_cv("y", feats, **opts)).item()
        assert cv == alone
    # A fold column works inside groups too (ids per group).
    grouped = df.select(ps.fit_groups("y", feats, by="g", kind="cv", fold_column="fold", **opts)).unnest("y")
    assert grouped.height == 3
    assert all(len(cv["fold_scores"]) == 4 for cv in grouped["y"])


def test_ridge_cv_over_l2() -> None:
    df = _frame(120, 4, seed=5, classification=True)
    feats = _features(df)
    cv = df.select(ps.fit_cv("y", feats, l2=[1.0, 1e-2, 1e-4], folds=3)).item()
    assert cv["penalty"] == "l2"
    assert cv["values"] == [1.0, 1e-2, 1e-4]
    assert cv["model"]["l2"] == cv["chosen"]


def test_cv_errors() -> None:
    with pytest.raises(ValueError, match="log_loss"):
        ps.fit_cv("y", ["x"], loss="hinge", scoring="log_loss")
    with pytest.raises(ValueError, match="folds"):
        ps.fit_cv("y", ["x"], folds=1)
    with pytest.raises(ValueError, match="select"):
        ps.fit_cv("y", ["x"], select="min")  # type: ignore[typeddict-item]
    df = pl.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [0, 0, 1, 1], "fold": [1, 1, 1, None]})
    with pytest.raises(pl.exceptions.ComputeError, match="null fold id"):
        df.select(ps.fit_cv("y", ["x"], fold_column="fold"))
    with pytest.raises(pl.exceptions.ComputeError, match=r"fold [01] hold a single class"):
        df.with_columns(fold=pl.Series([0, 0, 1, 1])).select(ps.fit_cv("y", ["x"], fold_column="fold"))
