"""Invariants of every fit on random small problems (hypothesis).

For each loss and every solver that takes it (each named: ``auto`` would pick Newton for the
smooth ones): the gap is non-negative, P >= D, the returned gap equals P - D recomputed
independently from the returned coefficients and duals, a fit that says converged meets tol,
and (smooth losses, which certify tight gaps within the epoch budget) a permutation of the rows
does not move the optimum beyond the certified radius.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given
from hypothesis import strategies as st

import polars_sdca as ps

from references import dual, primal

LOSSES = ["hinge", "smooth_hinge", "squared_hinge", "logistic", "squared", "absolute", "epsilon_insensitive"]
# The losses whose fits certify tight gaps within the epoch budget, for the row-order test.
SMOOTH = ["smooth_hinge", "squared_hinge", "logistic", "squared"]
CLASSIFICATION = {"hinge", "smooth_hinge", "squared_hinge", "logistic"}
REF = {"smooth_hinge": {"gamma": 1.0}, "epsilon_insensitive": {"epsilon": 0.1}}


def solvers_for(loss: str) -> list[str]:
    """Every solver that takes the loss (config.rs), each run explicitly: "auto" picks Newton for
    smooth losses with few features, which would leave SDCA untested on them."""
    out = ["sdca"]
    if loss in SMOOTH:
        out += ["accelerated", "newton"]
    if loss in ("hinge", "absolute", "epsilon_insensitive", "squared"):
        out.append("pdprox")
    return out


Problem = tuple[np.ndarray, np.ndarray, str, float, int]


@st.composite
def problems(draw: st.DrawFn, losses: list[str] = LOSSES) -> Problem:
    n = draw(st.integers(2, 25))
    d = draw(st.integers(1, 4))
    loss = draw(st.sampled_from(losses))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    x = rng.normal(size=(n, d)) * scale
    if draw(st.booleans()):
        x[rng.integers(0, n)] = 0.0  # an all-zero row
    if loss in CLASSIFICATION:
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        y[0], y[1] = -1.0, 1.0
    else:
        y = rng.normal(size=n) * draw(st.sampled_from([0.0, 1.0, 100.0]))
    l2 = draw(st.sampled_from([1e-3, 1e-1, 10.0]))
    return x, y, loss, l2, seed


def _fit(
    x: np.ndarray, y: np.ndarray, loss: str, l2: float, seed: int, solver: str
) -> tuple[dict, pl.DataFrame]:
    cols = [f"x{j}" for j in range(x.shape[1])]
    df = pl.DataFrame({**{c: x[:, j] for j, c in enumerate(cols)}, "y": y})
    opts = {
        "loss": loss,
        "l2": l2,
        "tol": 1e-9,
        "max_epochs": 300,
        "seed": seed,
        "fit_intercept": False,
        "solver": solver,
    }
    model = df.select(ps.fit("y", cols, **opts)).item()  # type: ignore[arg-type]
    rows = df.select(ps.fit_rows("y", cols, **opts).alias("r")).unnest("r")  # type: ignore[arg-type]
    # "accelerated" falls back to plain SDCA (and says so) where its extra ridge weight
    # kappa = R^2 / (gamma n) - l2 is not positive (config.rs).
    assert model["solver"] in ({solver, "sdca"} if solver == "accelerated" else {solver})
    return model, rows


@given(problems())
def test_certificate_invariants(problem: Problem) -> None:
    x, y, loss, l2, seed = problem
    params = REF.get(loss, {})
    for solver in solvers_for(loss):
        model, rows = _fit(x, y, loss, l2, seed, solver)
        w = np.asarray(model["coef"])
        p = primal(x, y, w, loss, l2, **params)
        d = dual(x, y, rows["dual"].to_numpy(), loss, l2, **params)
        scale = max(1.0, abs(p))
        assert model["gap"] >= -1e-12, solver
        assert p >= d - 1e-9 * scale, solver
        assert abs(model["primal"] - p) <= 1e-9 * scale, solver
        assert abs((p - d) - model["gap"]) <= 1e-8 * scale, solver
        if model["converged"]:
            assert model["gap"] <= 1e-9 * max(model["primal"], 1e-300) * (1 + 1e-9), solver
        assert np.isfinite(rows["decision"].to_numpy()).all(), solver


@given(problems(SMOOTH))
def test_row_order_does_not_change_the_optimum(problem: Problem) -> None:
    x, y, loss, l2, seed = problem
    perm = np.random.default_rng(seed + 1).permutation(len(y))
    for solver in solvers_for(loss):
        a, _ = _fit(x, y, loss, l2, seed, solver)
        b, _ = _fit(x[perm], y[perm], loss, l2, seed, solver)
        # Strong convexity in w: ||w - w*|| <= sqrt(2 gap / l2) for each fit, where the gap is
        # known only to the rounding of P and D (a few ulps of |P|: a gap of 0.0 is not exact).
        radius = sum(np.sqrt(2 * (m["gap"] + 1e-15 * abs(m["primal"])) / l2) for m in (a, b))
        assert np.linalg.norm(np.subtract(a["coef"], b["coef"])) <= radius + 1e-9, solver
