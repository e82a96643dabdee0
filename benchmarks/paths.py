"""Regularization paths, Gap Safe screening and per-group cross-validation against peers.

Usage (from the repository root, plugin built with ``make build``)::

    python benchmarks/paths.py                 # every row; refuses a dirty tree
    python benchmarks/paths.py --rows lasso,cv --dry-run   # print only (a dirty tree allowed)

Rows (issue 19), fixed before any measurement, CPU seconds of this process (``time.process_time``;
the machine is shared, so wall time is noisy) and wall seconds:

* ``lasso``: a 100-value Lasso path (``l2 = 0``, ``l1`` from the exact ``l1_max`` down to
  ``1e-3 l1_max``, scikit-learn's ``eps``) on a dense ``p >> n`` set (200 x 5,000 Gaussian,
  20 true features, seed 0): ``fit_path`` at ``tol = 1e-6`` (relative duality gap) against
  scikit-learn's ``lasso_path`` and, if installed, celer's ``celer_path`` at the same grid and
  ``tol``; each peer's objective at every value is recomputed here and compared with ours.
* ``sparse``: a 100-value L1-logistic path (``l2 = 1e-6``, the elastic net next to it) on CoNLL
  tokens (``cases.load_sparse``, ``--n-rows`` rows) against a loop of liblinear
  ``LogisticRegression(penalty="l1", C = 1 / (l1 n))`` fits over the same grid.
* ``screening``: the ``lasso`` path with ``screening=True`` and ``False``: CPU seconds and the
  number of features screened is in the core (``Path::screened``, ``Path::nnz_visited``; the
  Rust test ``screened_path_equals_the_unscreened_one`` checks that fewer entries are visited).
* ``cv``: 5-fold cross-validation over 20 ``C`` values (``logspace(-4, 4, 20)``) on 2,000 groups
  of 60 rows x 5 features: one ``fit_groups(kind="cv")`` against a loop of scikit-learn
  ``LogisticRegressionCV(Cs=20, cv=5)`` over the groups.

Writes ``benchmarks/out/paths.json`` naming the commit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import polars_sdca as ps

HERE = Path(__file__).parent
OUT = HERE / "out"


def dirty() -> bool:
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=HERE, capture_output=True, text=True
    )
    return bool(out.stdout.strip()) or out.returncode != 0


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def timed(f: Any) -> tuple[Any, float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = f()
    return out, time.process_time() - c0, time.perf_counter() - w0


def lasso_objective(X: np.ndarray, y: np.ndarray, w: np.ndarray, b: float, l1: float) -> float:
    r = X @ w + b - y
    return float(0.5 * np.mean(r * r) + l1 * np.abs(w).sum())


def dense_problem(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, p = 200, 5000
    X = rng.normal(size=(n, p))
    w = np.zeros(p)
    w[rng.choice(p, 20, replace=False)] = rng.normal(size=20) * 2
    return X, X @ w + rng.normal(size=n)


def ours_path(
    X: np.ndarray, y: np.ndarray, *, screening: bool, tol: float
) -> tuple[list[dict[str, Any]], float, float]:
    frame = pl.DataFrame({"x": X, "y": y})
    expr = ps.fit_path("y", "x", loss="squared", l2=0.0, n_l1=100, tol=tol, screening=screening)
    path, cpu, wall = timed(lambda: frame.select(expr).item())
    return list(path), cpu, wall


def row_lasso(args: argparse.Namespace) -> dict[str, Any]:
    from sklearn.linear_model import lasso_path

    X, y = dense_problem()
    path, cpu, wall = ours_path(X, y, screening=True, tol=args.tol)
    l1s = np.array([m["l1"] for m in path])
    ours = [m["primal"] for m in path]
    Xc, yc = X - X.mean(axis=0), y - y.mean()  # lasso_path has no intercept: center, as LassoCV does
    (_, coefs, _), s_cpu, s_wall = timed(
        lambda: lasso_path(Xc, yc, alphas=l1s, tol=args.tol, max_iter=100_000)
    )
    theirs = [
        lasso_objective(X, y, coefs[:, k], float(y.mean() - X.mean(axis=0) @ coefs[:, k]), l1)
        for k, l1 in enumerate(l1s)
    ]
    out: dict[str, Any] = {
        "ours_cpu": cpu,
        "ours_wall": wall,
        "sklearn_cpu": s_cpu,
        "sklearn_wall": s_wall,
        "max_gap_rel": max(m["gap"] / m["primal"] for m in path),
        "sklearn_excess_rel": max((t - o) / o for t, o in zip(theirs, ours, strict=True)),
    }
    try:
        from celer import celer_path

        (_, c_coefs, _), c_cpu, c_wall = timed(lambda: celer_path(Xc, yc, "lasso", alphas=l1s, tol=args.tol))
        out |= {"celer_cpu": c_cpu, "celer_wall": c_wall}
        out["celer_excess_rel"] = max(
            (lasso_objective(X, y, c_coefs[:, k], float(y.mean() - X.mean(axis=0) @ c_coefs[:, k]), l1) - o)
            / o
            for k, (l1, o) in enumerate(zip(l1s, ours, strict=True))
        )
    except ImportError:
        out["celer"] = "not installed (pip install celer)"
    return out


def row_screening(args: argparse.Namespace) -> dict[str, Any]:
    X, y = dense_problem()
    on, cpu_on, wall_on = ours_path(X, y, screening=True, tol=args.tol)
    off, cpu_off, wall_off = ours_path(X, y, screening=False, tol=args.tol)
    worst = max(abs(a["primal"] - b["primal"]) / b["primal"] for a, b in zip(on, off, strict=True))
    return {
        "on_cpu": cpu_on,
        "off_cpu": cpu_off,
        "on_wall": wall_on,
        "off_wall": wall_off,
        "epochs_on": sum(m["epochs"] for m in on),
        "epochs_off": sum(m["epochs"] for m in off),
        "max_objective_diff_rel": worst,
    }


def row_sparse(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    from cases import load_sparse
    from sklearn.linear_model import LogisticRegression

    p = load_sparse(args.n_rows, 0)
    expr = ps.fit_path(
        "y", "features", loss="logistic", l2=1e-6, n_l1=100, n_features=p.n_features, tol=args.tol
    )
    path, cpu, wall = timed(lambda: p.df.select(expr).item())
    l1s = [m["l1"] for m in path]

    def liblinear() -> None:
        for l1 in l1s:
            LogisticRegression(penalty="l1", C=1.0 / (l1 * p.n), solver="liblinear", tol=args.tol).fit(
                p.x, p.y
            )

    _, s_cpu, s_wall = timed(liblinear)
    return {"rows": p.n, "ours_cpu": cpu, "ours_wall": wall, "liblinear_cpu": s_cpu, "liblinear_wall": s_wall}


def row_cv(args: argparse.Namespace) -> dict[str, Any]:
    from sklearn.linear_model import LogisticRegressionCV

    rng = np.random.default_rng(1)
    groups, rows, d = args.groups, 60, 5
    g = np.repeat(np.arange(groups), rows)
    X = rng.normal(size=(groups * rows, d))
    truth = rng.normal(size=(groups, d))
    y = (np.einsum("ij,ij->i", X, truth[g]) + rng.normal(size=g.size) > 0).astype(np.int64)
    frame = pl.DataFrame({"g": g, "y": y, **{f"f{j}": X[:, j] for j in range(d)}})
    feats = [f"f{j}" for j in range(d)]
    Cs = np.logspace(-4, 4, 20)
    expr = ps.fit_groups("y", feats, by="g", kind="cv", l2=list(1.0 / (Cs * rows)), folds=5)
    _, cpu, wall = timed(lambda: frame.select(expr))

    def loop() -> None:
        for k in range(groups):
            sl = slice(k * rows, (k + 1) * rows)
            LogisticRegressionCV(Cs=20, cv=5, l1_ratios=(0.0,)).fit(X[sl], y[sl])

    _, s_cpu, s_wall = timed(loop)
    return {
        "groups": groups,
        "ours_cpu": cpu,
        "ours_wall": wall,
        "sklearn_cpu": s_cpu,
        "sklearn_wall": s_wall,
    }


ROWS = {"lasso": row_lasso, "screening": row_screening, "sparse": row_sparse, "cv": row_cv}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated: {', '.join(ROWS)}")
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--n-rows", type=int, default=50_000, help="CoNLL token rows of the sparse row")
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--dry-run", action="store_true", help="print only (allowed on a dirty tree)")
    args = parser.parse_args()
    if dirty() and not args.dry_run:
        raise SystemExit("the working tree has uncommitted changes: commit first, or pass --dry-run")
    results = {}
    for name in filter(None, args.rows.split(",")):
        results[name] = ROWS[name](args)
        print(name, json.dumps(results[name], indent=1), flush=True)
    if not args.dry_run:
        OUT.mkdir(exist_ok=True)
        record = {"commit": commit(), "cpus": os.cpu_count(), "args": vars(args), "results": results}
        (OUT / "paths.json").write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
