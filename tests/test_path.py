"""fit_path: one certified model per penalty value, against separate fits and references."""

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
    w[: max(1, d // 3)] = rng.standard_normal(max(1, d // 3))
    t = X @ w + 0.5 + 0.3 * rng.standard_normal(n)
    y = np.where(t > 0.5, 1, -1) if classification else t
    return pl.DataFrame({f"f{j}": X[:, j] for j in range(d)} | {"y": y, "g": rng.integers(0, 3, n)})


def _features(df: pl.DataFrame) -> list[str]:
    return [c for c in df.columns if c.startswith("f")]


@pytest.mark.parametrize(
    ("loss", "l2", "classification"),
    [
        ("squared", 0.0, False),
        ("logistic", 1e-3, True),
        ("logistic", 0.0, True),
        ("squared_hinge", 1e-2, True),
    ],
)
def test_path_models_equal_separate_fits(loss: str, l2: float, classification: bool) -> None:
    df = _frame(200, 12, seed=1, classification=classification)
    feats = _features(df)
    path = df.select(
        ps.fit_path("y", feats, loss=loss, l2=l2, n_l1=10, l1_min_ratio=1e-2, tol=1e-12, max_epochs=100_000)
    ).item()
    assert len(path) == 10
    l1s = [m["l1"] for m in path]
    assert l1s == sorted(l1s, reverse=True)
    assert all(m["l2"] == l2 for m in path)
    for m in path:
        alone = df.select(
            ps.fit("y", feats, loss=loss, l2=l2, l1=m["l1"], tol=1e-12, max_epochs=100_000)
        ).item()
        assert m["converged"], m["status"]
        assert alone["converged"], alone["status"]
        # Objectives within 1e-8 relative (both certified to a relative gap of 1e-12).
        assert abs(m["primal"] - alone["primal"]) <= 1e-8 * alone["primal"], (
            m["l1"],
            m["primal"],
            alone["primal"],
        )


def test_l1_max_is_exact() -> None:
    """The first model is exactly zero at the squared loss's closed-form ``l1_max`` (intercept:
    the centred ``||X^T (y - ybar)||_inf / n``, scikit-learn's ``alpha_max``), and a fit just
    below it is not zero: the zero model's objective exceeds its certified objective."""
    df = _frame(150, 8, seed=2, classification=False)
    feats = _features(df)
    X, y = df.select(feats).to_numpy(), df["y"].to_numpy()
    want = np.abs((X - X.mean(0)).T @ (y - y.mean())).max() / len(y)
    path = df.select(ps.fit_path("y", feats, loss="squared", l2=0.0, n_l1=2)).item()
    first = path[0]
    assert abs(first["l1"] - want) <= 1e-13 * want
    assert first["coef"] == [0.0] * 8
    assert first["solver"] == "closed_form"
    assert abs(first["intercept"] - y.mean()) <= 1e-13 * abs(y.mean())
    assert first["gap"] <= 1e-12 * first["primal"]
    below = df.select(ps.fit("y", feats, loss="squared", l2=0.0, l1=want * (1 - 1e-3), tol=1e-12)).item()
    zero_primal = 0.5 * np.mean((y - y.mean()) ** 2)
    assert zero_primal - below["primal"] > below["gap"]
    assert any(c != 0.0 for c in below["coef"])


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "smooth_hinge"])
def test_l1_max_zero_at_and_nonzero_below_for_smooth_classifiers(loss: str) -> None:
    df = _frame(120, 6, seed=3, classification=True)
    feats = _features(df)
    first = df.select(ps.fit_path("y", feats, loss=loss, l2=1e-3, n_l1=1)).item()[0]
    assert first["coef"] == [0.0] * 6
    assert first["gap"] <= 1e-12
    below = df.select(ps.fit("y", feats, loss=loss, l2=1e-3, l1=first["l1"] * (1 - 1e-2), tol=1e-12)).item()
    assert first["primal"] - below["primal"] > below["gap"]
    # Above, the optimum is zero: a certified fit's weights lie within its radius of zero.
    above = df.select(ps.fit("y", feats, loss=loss, l2=1e-3, l1=first["l1"] * (1 + 1e-9), tol=1e-12)).item()
    radius = np.sqrt(2 * above["gap"] / 1e-3)
    assert np.linalg.norm(above["coef"]) <= radius + 1e-12


def test_given_grids_and_ridge_paths() -> None:
    df = _frame(100, 5, seed=4, classification=True)
    feats = _features(df)
    path = df.select(ps.fit_path("y", feats, l1=np.array([1e-3, 1e-1, 1e-2]), l2=1e-2)).item()
    assert [m["l1"] for m in path] == [1e-1, 1e-2, 1e-3]
    ridge = df.select(ps.fit_path("y", feats, l2=[1.0, 1e-2, 1e-4], tol=1e-10)).item()
    assert [m["l2"] for m in ridge] == [1.0, 1e-2, 1e-4]
    assert all(m["l1"] == 0.0 for m in ridge)
    for m in ridge:
        alone = df.select(ps.fit("y", feats, l2=m["l2"], tol=1e-10)).item()
        assert abs(m["primal"] - alone["primal"]) <= 1e-8 * alone["primal"]
    # A computed ridge grid: n_l2 values from 1e4 / n down by l2_min_ratio.
    ridge = df.select(ps.fit_path("y", feats, n_l2=3, l2_min_ratio=1e-4)).item()
    assert np.allclose([m["l2"] for m in ridge], [1e4 / 100, 1e2 / 100, 1.0 / 100], rtol=1e-12)


def test_groups_equal_per_group_calls() -> None:
    df = _frame(240, 6, seed=5, classification=True)
    feats = _features(df)
    opts = {"l2": 1e-3, "n_l1": 5, "l1_min_ratio": 0.05, "tol": 1e-8}
    agg = df.group_by("g").agg(pl.col("y").sdca.fit_path(feats, **opts).alias("y")).sort("g")
    grouped = df.select(ps.fit_groups("y", feats, by="g", kind="path", **opts)).unnest("y").sort("g")
    assert_frame_equal(agg, grouped)
    for g, models in zip(agg["g"], agg["y"], strict=False):
        alone = df.filter(pl.col("g") == g).select(ps.fit_path("y", feats, **opts)).to_series()
        assert models.to_list() == alone[0].to_list()


def test_predict_takes_one_model_of_the_path() -> None:
    df = _frame(80, 4, seed=6, classification=False)
    feats = _features(df)
    out = df.with_columns(
        path=ps.fit_path("y", feats, loss="squared", l2=1e-4, n_l1=4, tol=1e-12)
    ).with_columns(pred=pl.col("path").list.last().sdca.predict(feats))
    last = out["path"][0][-1]
    X = df.select(feats).to_numpy()
    assert np.allclose(out["pred"].to_numpy(), X @ np.array(last["coef"]) + last["intercept"], rtol=1e-12)


def test_path_errors_are_raised_early() -> None:
    with pytest.raises(ValueError, match="l1 or for l2, not both"):
        ps.fit_path("y", ["x"], l1=[0.1], l2=[0.1])
    with pytest.raises(ValueError, match="n_l1"):
        ps.fit_path("y", ["x"], n_l1=0)
    with pytest.raises(ValueError, match="warm_start"):
        ps.fit_path("y", ["x"], warm_start={"coef": [0.0], "intercept": 0.0})
    with pytest.raises(TypeError, match="l1 must be a number"):
        ps.fit_path("y", ["x"], l1=["a"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="l2"):
        ps.fit_path("y", ["x"], l2=0.0, l1=[0.1, 0.0])


def test_on_error_null_gives_a_list_with_the_status() -> None:
    df = pl.DataFrame({"g": [1, 1, 2, 2], "x": [0.0, 1.0, 0.0, 1.0], "y": [1, 1, -1, 1]})
    out = df.group_by("g", maintain_order=True).agg(pl.col("y").sdca.fit_path(["x"], n_l1=3, on_error="null"))
    first, second = out["y"].to_list()
    assert len(first) == 1
    assert first[0]["coef"] is None
    assert first[0]["screened"] is None
    assert first[0]["nnz_visited"] is None
    assert "class" in first[0]["status"]
    assert len(second) == 3


def test_models_report_what_screening_saved() -> None:
    # A Lasso with p >> n: the closed-form zero model screens every feature, and sequential
    # screening leaves features out of the next fits' passes.
    df = _frame(60, 300, seed=7, classification=False)
    feats = _features(df)
    opts = {"loss": "squared", "l2": 0.0, "n_l1": 10, "l1_min_ratio": 0.05, "tol": 1e-9}
    on, off = (df.select(ps.fit_path("y", feats, screening=s, **opts)) for s in (True, False))
    dtype = on.schema["y"].inner  # type: ignore[attr-defined]
    assert dtype.to_schema()["screened"] == pl.UInt64
    assert dtype.to_schema()["nnz_visited"] == pl.UInt64
    on_models, off_models = on.item(), off.item()
    assert on_models[0]["solver"] == "closed_form"
    assert on_models[0]["screened"] == len(feats)
    assert on_models[1]["screened"] > 0, [m["screened"] for m in on_models]
    # Screening off leaves nothing out (the zero model aside). The entries read are reported,
    # not compared: here coordinate descent's own working sets already skip most features and
    # the sequential test's passes cost more than it saves (issue 19's benchmark measures it).
    assert all(m["screened"] == 0 for m in off_models[1:])
    assert all(m["nnz_visited"] > 0 for m in on_models[1:] + off_models[1:])
    for a, b in zip(on_models, off_models, strict=True):
        assert abs(a["primal"] - b["primal"]) <= a["gap"] + b["gap"] + 1e-12 * abs(b["primal"])


def test_l1_ratio_path_matches_scikit_learn_enet_path() -> None:
    # scikit-learn's ElasticNet: (1/2n)||y - Xw||^2 + alpha rho ||w||_1 + alpha (1 - rho)/2 ||w||^2,
    # ours with l1 = alpha rho and l2 = alpha (1 - rho) (no intercept on either side).
    from sklearn.linear_model import enet_path

    df = _frame(150, 10, seed=8, classification=False)
    feats = _features(df)
    X, y = df.select(feats).to_numpy(), df["y"].to_numpy()
    rho = 0.4
    path = df.select(
        ps.fit_path("y", feats, loss="squared", l1_ratio=rho, n_l1=8, tol=1e-12, fit_intercept=False)
    ).item()
    l1s = np.array([m["l1"] for m in path])
    assert all(abs(m["l2"] - m["l1"] * (1 - rho) / rho) <= 1e-15 * m["l2"] for m in path)
    assert path[0]["solver"] == "closed_form"
    _, coefs, _ = enet_path(X, y, l1_ratio=rho, alphas=l1s / rho, tol=1e-14, max_iter=1_000_000)
    for m, w in zip(path, coefs.T, strict=True):
        assert m["converged"], m["status"]

        def objective(v: np.ndarray, m: dict = m) -> float:
            r = y - X @ v
            return float(r @ r / (2 * len(y)) + m["l1"] * np.abs(v).sum() + m["l2"] / 2 * v @ v)

        ours, theirs = objective(np.asarray(m["coef"])), objective(w)
        assert abs(ours - m["primal"]) <= 1e-12 * ours
        # Ours is certified within its gap of P*, which scikit-learn's objective cannot beat.
        assert ours - m["gap"] <= theirs * (1 + 1e-12), (m["l1"], ours, theirs)
        assert ours <= theirs + 1e-9 * theirs, (m["l1"], ours, theirs)
    # The top is the exact l1_max of the tied problem: zero there, not zero just below.
    below = df.select(
        ps.fit(
            "y",
            feats,
            loss="squared",
            l1=l1s[0] * 0.999,
            l2=l1s[0] * 0.999 * (1 - rho) / rho,
            tol=1e-12,
            fit_intercept=False,
        )
    ).item()
    assert any(c != 0.0 for c in below["coef"])
    # Cross-validation runs the same tied path in every fold; the refit model keeps the tie.
    cv = df.select(
        ps.fit_cv("y", feats, loss="squared", l1_ratio=rho, n_l1=5, folds=3, fit_intercept=False)
    ).item()
    refit = cv["model"]
    assert cv["penalty"] == "l1"
    assert refit["l1"] in cv["values"]
    assert abs(refit["l2"] - refit["l1"] * (1 - rho) / rho) <= 1e-15 * refit["l2"]
    with pytest.raises(ValueError, match="l1_ratio"):
        ps.fit_path("y", feats, l1_ratio=0.5, l2=1e-3)
    with pytest.raises(ValueError, match="l1_ratio"):
        ps.fit_path("y", feats, l1_ratio=1.5)
