"""Pdprox against the subgradient method on hinge + L1: O(1/T) against O(1/sqrt(T)).

Usage (from the repository root, plugin built with ``make build``)::

    python benchmarks/pdprox.py            # under a minute on 2 cores
    python benchmarks/pdprox.py --max-passes 10000

Problem (one of the paper's families, Yang et al. 2015 section 5, non-smooth loss plus non-smooth
penalty): ``P(w) = (1/n) sum_i max(0, 1 - y_i x_i.w) + l1 ||w||_1`` with ``l1 = 0.03``, no
intercept, ``l2 = 0``, on scikit-learn's breast_cancer (569 x 30, standardized). ``P*`` is the
exact optimum of the linear program (scipy ``linprog``, HiGHS), checked against the certified
lower bound (``primal - gap``) of a long polars-sdca fit.

Curves (suboptimality ``P(w_T) - P*`` relative to ``P*`` against passes ``T``; one pass is one
``X w`` and one ``X^T r`` for every method):

- ``pdprox (last)`` / ``pdprox (average)``: ``solver="pdprox"`` with ``max_epochs=T`` on a
  geometric grid of ``T`` (a fit capped at ``T`` runs the same deterministic trajectory), the
  objective of the returned coefficients recomputed in numpy. The averaged iterate is the one of
  the paper's O(1/T) bound (Theorem 6).
- ``subgradient``: the deterministic subgradient method ``w <- w - eta_0 / sqrt(t) g_t``, as the
  paper's ``gd`` baseline: ``eta_0`` tuned over ``2^k`` times ``1 / ||X||_2^2 * n`` for
  ``k = -10..10``, the best curve (smallest final best-so-far objective) reported; the curve is
  the best objective so far, the standard output of the method.

Writes ``benchmarks/pdprox.png`` (log-log, with 1/T and 1/sqrt(T) guides) and
``benchmarks/results_pdprox.md`` (passes to reach each relative suboptimality).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
from pathlib import Path

import numpy as np
import polars as pl
import scipy.sparse as sp
from scipy import optimize

import polars_sdca as ps

HERE = Path(__file__).parent
L1 = 0.03
THRESHOLDS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5)


def load() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_breast_cancer

    x, target = load_breast_cancer(return_X_y=True)
    x = np.asarray(x, dtype=float)
    return (x - x.mean(0)) / x.std(0), np.where(target == 0, 1.0, -1.0)


def objective(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    return float(np.maximum(0.0, 1.0 - y * (x @ w)).mean() + L1 * np.abs(w).sum())


def lp_optimum(x: np.ndarray, y: np.ndarray) -> float:
    """``min (1/n) sum t_i + l1 sum (w+ + w-)`` s.t. ``t_i >= 1 - y_i x_i.(w+ - w-)``, all >= 0."""
    n, d = x.shape
    yx = sp.csr_matrix(y[:, None] * x)
    a = sp.hstack([-yx, yx, -sp.identity(n)]).tocsr()
    c = np.concatenate([np.full(2 * d, L1), np.full(n, 1.0 / n)])
    res = optimize.linprog(c, A_ub=a, b_ub=-np.ones(n), bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(res.message)
    w = res.x[:d] - res.x[d : 2 * d]
    return objective(x, y, w)


def pdprox_curve(
    frame: pl.DataFrame, features: list[str], x: np.ndarray, y: np.ndarray, output: str, grid: list[int]
) -> list[float]:
    values = []
    for t in grid:
        m = frame.select(
            ps.fit(
                "y",
                features,
                loss="hinge",
                solver="pdprox",
                l2=0.0,
                l1=L1,
                fit_intercept=False,
                tol=1e-12,
                max_epochs=t,
                check_every=t,
                output=output,
            ).alias("m")
        ).item()
        values.append(objective(x, y, np.asarray(m["coef"])))
    return values


def subgradient_curve(x: np.ndarray, y: np.ndarray, passes: int, eta0: float) -> np.ndarray:
    """Best objective so far after each pass of ``w <- w - eta0/sqrt(t) g``."""
    n = x.shape[0]
    w = np.zeros(x.shape[1])
    best = np.empty(passes)
    current = objective(x, y, w)
    for t in range(1, passes + 1):
        active = y * (x @ w) < 1.0
        g = -(x[active].T @ y[active]) / n + L1 * np.sign(w)
        w = w - eta0 / np.sqrt(t) * g
        current = min(current, objective(x, y, w))
        best[t - 1] = current
    return best


def passes_to(curve: np.ndarray | list[float], grid: list[int], p_star: float, threshold: float) -> str:
    for t, v in zip(grid, curve, strict=True):
        if (v - p_star) / p_star <= threshold:
            return str(t)
    return f"> {grid[-1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-passes", type=int, default=100_000)
    args = parser.parse_args()
    x, y = load()
    n, d = x.shape
    features = [f"f{j}" for j in range(d)]
    frame = pl.DataFrame({**{f: x[:, j] for j, f in enumerate(features)}, "y": y})
    p_star = lp_optimum(x, y)
    cert = frame.select(
        ps.fit(
            "y",
            features,
            loss="hinge",
            solver="pdprox",
            l2=0.0,
            l1=L1,
            fit_intercept=False,
            tol=1e-7,
            max_epochs=300_000,
            check_every=10,
        ).alias("m")
    ).item()
    lower = cert["primal"] - cert["gap"]
    assert lower <= p_star * (1 + 1e-9), (lower, p_star)

    grid = sorted({round(v) for v in np.geomspace(1, args.max_passes, 60)})
    curves: dict[str, list[float]] = {
        "pdprox (last)": pdprox_curve(frame, features, x, y, "last", grid),
        "pdprox (average)": pdprox_curve(frame, features, x, y, "average", grid),
    }
    base = n / np.linalg.norm(x, 2) ** 2
    runs = {k: subgradient_curve(x, y, args.max_passes, base * 2.0**k) for k in range(-10, 11)}
    k_best = min(runs, key=lambda k: runs[k][-1])
    sub = runs[k_best]
    curves[f"subgradient (eta0 = 2^{k_best} n/||X||^2)"] = [float(sub[t - 1]) for t in grid]

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for label, curve in curves.items():
        rel = np.maximum((np.asarray(curve) - p_star) / p_star, 1e-16)
        ax.loglog(grid, rel, marker=".", label=label)
    g = np.asarray(grid, dtype=float)
    ax.loglog(g, 1.0 / g, "k:", lw=1, label="1/T")
    ax.loglog(g, 1.0 / np.sqrt(g), "k--", lw=1, label="1/sqrt(T)")
    ax.set_xlabel("passes T")
    ax.set_ylabel("(P(w_T) - P*) / P*")
    ax.set_ylim(1e-9, 10)
    ax.set_title(f"hinge + L1 (l1={L1}), breast_cancer {n}x{d}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(HERE / "pdprox.png", dpi=110)

    header = "| method | " + " | ".join(f"rel. subopt. <= {t:g}" for t in THRESHOLDS) + " |"
    lines = [header, "|---|" + "---|" * len(THRESHOLDS)]
    for label, curve in curves.items():
        cells = [passes_to(curve, grid, p_star, t) for t in THRESHOLDS]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    def slope(curve: list[float]) -> float:
        """Least-squares slope of log(relative suboptimality) against log(T) for T >= 1000."""
        t = np.asarray(grid, dtype=float)
        rel = np.maximum((np.asarray(curve) - p_star) / p_star, 1e-16)
        keep = t >= 1000
        return float(np.polyfit(np.log(t[keep]), np.log(rel[keep]), 1)[0])

    final = [
        f"| {label} | {(curve[-1] - p_star) / p_star:.2e} | {slope(curve):.2f} |"
        for label, curve in curves.items()
    ]
    text = f"""# Pdprox vs the subgradient method (`benchmarks/pdprox.py`)

Hinge + L1 (`l1 = {L1}`, `l2 = 0`, no intercept) on breast_cancer ({n} x {d}, standardized).
`P* = {p_star:.12g}` from the LP (scipy `linprog`, HiGHS); polars-sdca's certified lower bound at
`tol=1e-7`: `{lower:.12g}` ({cert["epochs"]} passes). Passes are full passes (one `X w` and one
`X^T r`) for every method; the pass counts below are the first point of a geometric grid of
{len(grid)} budgets (1 to {args.max_passes}) where the relative suboptimality
`(P(w_T) - P*) / P*` is at most the threshold. The subgradient method's step `eta0 / sqrt(t)` is
the best of `eta0 = 2^k n / ||X||_2^2`, `k = -10..10` (the paper's tuning of its `gd` baseline),
and its curve is the best objective so far.

Passes to reach a relative suboptimality:

{chr(10).join(lines)}

Relative suboptimality after {args.max_passes} passes:

| method | (P - P*) / P* | log-log slope, T >= 1000 |
|---|---|---|
{chr(10).join(final)}

![suboptimality against passes](pdprox.png)

Reading: the O(1/T) of Theorem 6 (for the averaged iterate) against the O(1/sqrt(T)) of the
subgradient method shows between 10^2 and 10^4 passes, where the subgradient curve runs parallel
to the 1/sqrt(T) guide and both Pdprox curves to 1/T. The last iterate is the better output here
(and the sparse one). The subgradient method's step is tuned for this horizon (the best of 21 runs
at the final pass), which is what gives its best-so-far curve the late drops that steepen its
fitted slope; Pdprox needs no tuning (its step comes from the power-iteration estimate of
`||X||_2`).

Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()},
polars {pl.__version__}; {dt.date.today().isoformat()}. Deterministic: the pdprox curves do not
depend on the seed beyond the power-iteration start, which is seeded (`seed=0`).
"""
    (HERE / "results_pdprox.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
