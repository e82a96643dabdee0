"""Gap Safe screening never removes a feature that is non-zero at the optimum (hypothesis).

Issue 19's test: random problems, some with nearly collinear columns (where a loose sphere
test would be tempted) and with more features than rows, each solved along an ``l1`` path with
sequential screening on and off at a tight tolerance. A screened feature is set to zero, so a
feature screened by mistake would leave the screened model at a worse objective than the
unscreened one, or (its certificate being the full problem's) uncertified. Both objectives are
recomputed in numpy from the returned coefficients; with ``l2 > 0`` the optimum is unique and
every feature whose unscreened weight is farther from zero than the two certified radii
(strong convexity) must also be non-zero in the screened model.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import assume, given
from hypothesis import strategies as st

import polars_sdca as ps

from references import primal

# The losses screening applies to (functions.py, fit_path's `screening`).
LOSSES = ["squared", "logistic", "smooth_hinge", "squared_hinge"]
CLASSIFICATION = {"logistic", "smooth_hinge", "squared_hinge"}
TOL = 1e-10

Problem = tuple[np.ndarray, np.ndarray, str, float, int]


@st.composite
def problems(draw: st.DrawFn) -> Problem:
    n = draw(st.integers(6, 40))
    d = draw(st.integers(1, 30))
    loss = draw(st.sampled_from(LOSSES))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) * draw(st.sampled_from([0.1, 1.0, 10.0]))
    if d >= 2 and draw(st.booleans()):
        # A nearly collinear pair: the sphere test must not drop the one the optimum keeps.
        x[:, 1] = x[:, 0] + 1e-3 * rng.normal(size=n)
    w = np.zeros(d)
    w[: max(1, d // 4)] = rng.normal(size=max(1, d // 4))
    t = x @ w + 0.3 * rng.normal(size=n)
    if loss in CLASSIFICATION:
        y = np.where(t > np.median(t), 1.0, -1.0)
        y[0], y[1] = -1.0, 1.0
    else:
        y = t
    l2 = draw(st.sampled_from([0.0, 1e-3, 1e-1] if loss == "squared" else [1e-3, 1e-1]))
    return x, y, loss, l2, seed


def _path(x: np.ndarray, y: np.ndarray, loss: str, l2: float, seed: int, screening: bool) -> list[dict]:
    cols = [f"x{j}" for j in range(x.shape[1])]
    df = pl.DataFrame({**{c: x[:, j] for j, c in enumerate(cols)}, "y": y})
    return df.select(
        ps.fit_path(
            "y",
            cols,
            loss=loss,  # type: ignore[arg-type]
            l2=l2,
            n_l1=8,
            l1_min_ratio=0.02,
            tol=TOL,
            max_epochs=200_000,
            seed=seed,
            fit_intercept=False,
            screening=screening,
        )
    ).item()


@given(problems())
def test_screening_keeps_every_feature_of_the_optimum(problem: Problem) -> None:
    x, y, loss, l2, seed = problem
    params = {"gamma": 1.0} if loss == "smooth_hinge" else {}
    on, off = (_path(x, y, loss, l2, seed, screening) for screening in (True, False))
    assert [m["l1"] for m in on] == [m["l1"] for m in off]
    for a, b in zip(on, off, strict=True):
        l1 = a["l1"]
        # Convergence is another test's subject (a nearly collinear Lasso can stall coordinate
        # descent); a problem the unscreened path cannot solve says nothing about screening.
        assume(b["converged"])
        assert a["converged"], (l1, a["status"])
        wa, wb = np.asarray(a["coef"]), np.asarray(b["coef"])
        pa, pb = (primal(x, y, w, loss, l2, l1=l1, **params) for w in (wa, wb))
        scale = max(abs(pb), 1e-300)
        # Each model is within its certified gap of P* (up to the rounding of P and D).
        assert abs(pa - a["primal"]) <= 1e-9 * scale
        slack = a["gap"] + b["gap"] + 1e-12 * scale
        assert abs(pa - pb) <= slack, (l1, pa, pb, a["gap"], b["gap"])
        if l2 > 0:
            # ||w - w*|| <= sqrt(2 gap / l2) for each: a weight farther from zero than both radii
            # is non-zero at the optimum, so screening must have kept the feature.
            radius = sum(np.sqrt(2 * (m["gap"] + 1e-15 * abs(m["primal"])) / l2) for m in (a, b))
            must_keep = np.abs(wb) > radius + 1e-12
            assert np.all(wa[must_keep] != 0.0), (l1, np.flatnonzero(must_keep & (wa == 0.0)))
