"""fit_cv: K-fold cross-validation of a path per group, against a hand-written fold loop."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

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


def _fold_loop(
    df: pl.DataFrame, feats: list[str], scoring: str, fit_values: Callable[[pl.DataFrame], list[dict]]
) -> np.ndarray:
    """The held-out scores ``(n_folds, n_values)`` by hand, one row per value of the ``fold``
    column in increasing order (``fit_cv``'s fold order): ``fit_values`` fits the grid on the
    fold's training rows (a model per value), each model scored on the held-out rows."""
    X, y = df.select(feats).to_numpy(), df["y"].to_numpy()
    scores = []
    for f in sorted(df["fold"].unique()):
        test = (df["fold"] == f).to_numpy()
        models = fit_values(df.filter(pl.col("fold") != f))
        scores.append(
            [_score(scoring, X[test] @ np.array(m["coef"]) + m["intercept"], y[test]) for m in models]
        )
    return np.array(scores)


def _assert_summary(mean: list[float], se: list[float], fold_scores: np.ndarray) -> None:
    """A curve's mean and standard error (``sd / sqrt(K)``, ``K - 1`` degrees of freedom) of
    its fold scores."""
    k = fold_scores.shape[0]
    np.testing.assert_allclose(mean, fold_scores.mean(0), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(se, fold_scores.std(0, ddof=1) / np.sqrt(k), rtol=1e-10, atol=1e-14)


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
    want = _fold_loop(
        df,
        feats,
        scoring,
        lambda train: train.select(ps.fit_path("y", feats, **{**opts, "l1": values})).item(),
    )
    np.testing.assert_allclose(cv["fold_scores"], want, rtol=1e-12, atol=1e-14)
    _assert_summary(cv["mean"], cv["se"], want)
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


# ------------------------------------------------------------------------------------------
# Several elastic-net mixings: l1_ratio as a list
# ------------------------------------------------------------------------------------------

RATIOS = [0.2, 0.6, 1.0]


def _curve(cv: dict, rho: float) -> dict[str, list]:
    """The entries of one ratio's curve in a fit_cv struct."""
    keep = [i for i, r in enumerate(cv["l1_ratio"]) if r == rho]
    assert keep == list(range(keep[0], keep[-1] + 1)), "a ratio's pairs are consecutive"
    return {
        "values": [cv["values"][i] for i in keep],
        "mean": [cv["mean"][i] for i in keep],
        "se": [cv["se"][i] for i in keep],
        "fold_scores": [[s[i] for i in keep] for s in cv["fold_scores"]],
    }


def _tied_fits(
    train: pl.DataFrame, *, feats: list[str], loss: str, rho: float, values: list[float], tol: float
) -> list[dict]:
    """Plain fits on ``train`` at each ``l1`` of ``values`` with ``l2 = l1 (1 - rho) / rho``."""
    fits = [
        train.select(
            ps.fit("y", feats, loss=loss, l1=l1, l2=l1 * (1.0 - rho) / rho, tol=tol, max_epochs=100_000)
        ).item()
        for l1 in values
    ]
    assert all(m["converged"] for m in fits), rho
    return fits


@pytest.mark.parametrize(("loss", "classification"), [("logistic", True), ("squared", False)])
def test_several_l1_ratios_equal_a_fold_loop_of_plain_fits(loss: str, classification: bool) -> None:
    """Each (ratio, value)'s fold score against plain fits at that pair (l2 = l1 (1 - rho) / rho)
    on the fold's training rows, scored on its held-out rows; each ratio's grid is that ratio's
    own path on all rows (its own exact l1_max)."""
    df = _frame(160, 6, seed=6, classification=classification)
    feats = _features(df)
    scoring = "log_loss" if classification else "squared_error"
    tol = 1e-12
    opts = {"loss": loss, "n_l1": 5, "l1_min_ratio": 2e-2, "tol": tol, "max_epochs": 100_000}
    cv = df.select(ps.fit_cv("y", feats, fold_column="fold", l1_ratio=RATIOS, **opts)).item()
    assert cv["l1_ratio"] == [rho for rho in RATIOS for _ in range(5)]
    for rho in RATIOS:
        curve = _curve(cv, rho)
        alone = df.select(ps.fit_path("y", feats, l1_ratio=rho, **opts)).item()
        assert curve["values"] == [m["l1"] for m in alone], f"ratio {rho}: its own grid"
        fits = partial(_tied_fits, feats=feats, loss=loss, rho=rho, values=curve["values"], tol=tol)
        want = _fold_loop(df, feats, scoring, fits)
        # Both models are certified to a relative gap of 1e-12: for l2 > 0 within
        # sqrt(2 gap / l2) <~ 1e-6 of the optimum, for the Lasso (rho = 1) within an
        # objective of 1e-12 relative. The held-out scores agree far closer than 1e-5.
        np.testing.assert_allclose(curve["fold_scores"], want, rtol=1e-5, atol=1e-9, err_msg=f"ratio {rho}")
        _assert_summary(curve["mean"], curve["se"], np.asarray(curve["fold_scores"]))
    # The refit model is the plain fit at the chosen pair.
    rho, l1 = cv["chosen_l1_ratio"], cv["chosen"]
    assert cv["model"]["l1"] == l1
    assert cv["model"]["l2"] == pytest.approx(l1 * (1.0 - rho) / rho, rel=1e-15, abs=0.0)
    refit = df.select(ps.fit("y", feats, loss=loss, l1=l1, l2=cv["model"]["l2"], tol=tol, max_epochs=100_000))
    refit_model = refit.item()
    assert abs(refit_model["primal"] - cv["model"]["primal"]) <= refit_model["gap"] + cv["model"]["gap"]


@pytest.mark.parametrize("select", ["best", "one_standard_error"])
def test_chosen_pair_is_the_argmin_over_single_ratio_calls(select: str) -> None:
    df = _frame(200, 8, seed=7, classification=False)
    feats = _features(df)
    opts = {"loss": "squared", "n_l1": 8, "folds": 4, "seed": 3, "tol": 1e-10, "select": select}
    ratios = [0.9, 0.1, 0.5]  # any order: curves and ties follow it
    cv = df.select(ps.fit_cv("y", feats, l1_ratio=ratios, **opts)).item()
    singles = {rho: df.select(ps.fit_cv("y", feats, l1_ratio=rho, **opts)).item() for rho in ratios}
    pairs = []  # (mean, se, ratio index, value index, value) over every single call's curve
    for r, (rho, alone) in enumerate(singles.items()):
        curve = _curve(cv, rho)
        # The same seed draws the same folds for every ratio: each curve is the single call's.
        assert curve == {k: alone[k] for k in ("values", "mean", "se", "fold_scores")}, rho
        pairs += [
            (m, s, r, v, x)
            for v, (m, s, x) in enumerate(zip(alone["mean"], alone["se"], alone["values"], strict=True))
        ]
    best = min(pairs, key=lambda p: p[0])  # first on ties: ratio order, then value order
    assert (cv["best_l1_ratio"], cv["best"]) == (ratios[best[2]], best[4])
    if select == "best":
        chosen = best
    else:
        within = [p for p in pairs if p[0] <= best[0] + best[1]]
        chosen = min(within, key=lambda p: (p[3], p[0]))  # nearest its path's top, better mean
        assert chosen[3] <= best[3]
    assert (cv["chosen_l1_ratio"], cv["chosen"]) == (ratios[chosen[2]], chosen[4])
    alone = singles[ratios[chosen[2]]]
    if alone["chosen"] == cv["chosen"]:
        assert cv["model"] == alone["model"], "the refit is the single call's refit at that pair"


def test_l1_ratio_curves_explode_to_one_row_per_pair_and_accept_arrays() -> None:
    df = _frame(120, 4, seed=8, classification=True)
    feats = _features(df)
    opts = {"n_l1": 4, "folds": 3}
    out = df.select(ps.fit_cv("y", feats, l1_ratio=[0.5, 1.0], **opts))
    curves = out.unnest("y").select("l1_ratio", "values", "mean", "se").explode(pl.all())
    assert curves.height == 8
    assert curves.group_by("l1_ratio", maintain_order=True).len().rows() == [(0.5, 4), (1.0, 4)]
    for same in ((0.5, 1.0), np.array([0.5, 1.0])):
        assert df.select(ps.fit_cv("y", feats, l1_ratio=same, **opts)).item() == out.item()
    # One ratio (a number or a one-item list) and none keep the one-curve shape.
    one = df.select(ps.fit_cv("y", feats, l1_ratio=0.5, **opts)).item()
    assert one == df.select(ps.fit_cv("y", feats, l1_ratio=[0.5], **opts)).item()
    assert set(one["l1_ratio"]) == {0.5}
    assert one["chosen_l1_ratio"] == 0.5
    plain = df.select(ps.fit_cv("y", feats, l2=1e-3, **opts)).item()
    assert set(plain["l1_ratio"]) == {None}
    assert plain["chosen_l1_ratio"] is None


def test_several_l1_ratios_in_groups_equal_per_group_calls() -> None:
    df = _frame(300, 5, seed=9, classification=True)
    feats = _features(df)
    opts = {"l1_ratio": [0.3, 0.8], "n_l1": 4, "folds": 3, "tol": 1e-8}
    agg = df.group_by("g").agg(pl.col("y").sdca.fit_cv(feats, **opts).alias("y")).sort("g")
    grouped = df.select(ps.fit_groups("y", feats, by="g", kind="cv", **opts)).unnest("y").sort("g")
    assert_frame_equal(agg, grouped)
    for g, cv in zip(agg["g"], agg["y"], strict=True):
        alone = df.filter(pl.col("g") == g).select(ps.fit_cv("y", feats, **opts)).item()
        assert cv == alone
        assert cv["l1_ratio"] == [0.3] * 4 + [0.8] * 4


def test_bad_l1_ratios_are_refused() -> None:
    for bad, match in [
        ([], "l1_ratio is empty"),
        ([0.5, 0.0], r"l1_ratio.*got 0; each value must be in \(0, 1\]"),
        ([1.5], r"must be in \(0, 1\]"),
        ([0.5, float("nan")], r"got NaN; each value must be in \(0, 1\]"),
        ([0.5, 0.2, 0.5], "0.5 is given twice; pass each value once"),
    ]:
        with pytest.raises(ValueError, match=match):
            ps.fit_cv("y", ["x"], l1_ratio=bad)
    with pytest.raises(TypeError, match="each l1_ratio must be a number"):
        ps.fit_cv("y", ["x"], l1_ratio=[0.5, "a"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^l1_ratio must be a number, got str"):
        ps.fit_cv("y", ["x"], l1_ratio="0.5")  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match=r"a path runs one l1_ratio, got 2 values.*fit_cv"):
        ps.fit_path("y", ["x"], l1_ratio=[0.5, 1.0])
    with pytest.raises(ValueError, match="a path runs one l1_ratio"):
        ps.fit_groups("y", ["x"], by="g", kind="path", l1_ratio=[0.5, 1.0])
    with pytest.raises(ValueError, match="drop l2 or l1_ratio"):
        ps.fit_cv("y", ["x"], l1_ratio=[0.5, 1.0], l2=1e-3)
    with pytest.raises(ValueError, match="l1_ratio ties l2 to l1 along an l1 path"):
        ps.fit_cv("y", ["x"], l1_ratio=[0.5, 1.0], n_l2=3)
