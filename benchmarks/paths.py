"""Regularization paths, Gap Safe screening and per-group cross-validation against peers.

Usage (from the repository root, plugin built with ``make build``)::

    python benchmarks/paths.py                 # every row; refuses a dirty tree
    python benchmarks/paths.py --rows lasso,cv --dry-run   # print only (a dirty tree allowed)

Rows (issue 19), fixed before any measurement, CPU seconds of this process (``time.process_time``;
the machine is shared, so wall time is noisy) and wall seconds:

* ``lasso``: a 100-value Lasso path (``l2 = 0``, ``l1`` from the exact ``l1_max`` down to
  ``1e-3 l1_max``, scikit-learn's ``eps``) on a dense ``p >> n`` set (200 x 5,000 Gaussian,
  20 true features, seed 0): ``fit_path`` at ``tol = 1e-6`` (every value certified to that
  relative duality gap) against scikit-learn's ``lasso_path`` and, if installed, celer's
  ``celer_path`` over the same grid, each at the loosest tolerance of a ladder (two per decade,
  ``common.calibrate``) whose worst relative suboptimality over the path reaches ``1e-6`` too:
  the peers' tolerances are not relative gaps, so equal ``tol`` is not equal accuracy. The
  suboptimality of every path (ours included) is recomputed here against a reference path fitted
  by us to a certified relative gap of ``1e-10``. CPU seconds are medians of ``--repeat`` runs.
* ``sparse``: a 100-value L1-logistic path (``l2 = 1e-6``, the elastic net next to it) on CoNLL
  tokens (``cases.load_sparse``, ``--n-rows`` rows) against a loop of liblinear
  ``LogisticRegression(penalty="l1", C = 1 / (l1 n))`` fits over the same grid.
* ``screening``: the ``lasso`` path with Gap Safe screening on and off, run by the core's
  example ``lasso_path`` (``cargo run --release -p sdca-core --example lasso_path``) on the same
  data, so that the CPU seconds are the solver's alone (medians of ``--repeat`` runs): the
  stored matrix entries the fits visited (``Path::nnz_visited``, a path model's
  ``nnz_visited``), the features screened summed over the values (``Path::screened``) and the
  worst relative gap.
* ``cv``: 5-fold cross-validation over 20 ``C`` values (``logspace(-4, 4, 20)``) on 2,000 groups
  of 60 rows x 5 features: one ``fit_groups(kind="cv")`` against a loop of scikit-learn
  ``LogisticRegressionCV(Cs=20, cv=5)`` over the groups.

Writes ``benchmarks/out/paths.json`` (every row) and ``benchmarks/results_paths.md`` (the
``lasso`` and ``screening`` rows: the ``sparse`` and ``cv`` rows are not run to equal accuracy),
naming the commit; refuses a dirty tree unless ``--dry-run`` (which prints the section and
writes nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import polars_sdca as ps

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from common import (  # noqa: E402
    REPO,
    calibrate,
    dirty_tree,
    machine_info,
    relative_suboptimality,
    time_call,
    tol_ladder,
    worst,
)

OUT = HERE / "out"
RESULTS = HERE / "results_paths.md"


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


def lasso_peers() -> dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray, float], np.ndarray]]:
    """The peers of the ``lasso`` row: ``(Xc, yc, l1s, tol) -> coefs (p x values)`` on centred data."""
    from sklearn.linear_model import lasso_path

    peers: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray, float], np.ndarray]] = {
        "sklearn": lambda Xc, yc, l1s, tol: lasso_path(Xc, yc, alphas=l1s, tol=tol, max_iter=100_000)[1],
    }
    try:
        from celer import celer_path

        peers["celer"] = lambda Xc, yc, l1s, tol: celer_path(Xc, yc, "lasso", alphas=l1s, tol=tol)[1]
    except ImportError:
        pass
    return peers


def row_lasso(args: argparse.Namespace) -> dict[str, Any]:
    """Ours at ``tol`` (every value certified to that relative gap) against each peer at its
    loosest tolerance whose worst relative suboptimality over the path reaches the same number,
    judged against a reference path certified to ``--ref-tol`` (``common.calibrate``)."""
    X, y = dense_problem()
    target = args.tol
    timing = time_call(lambda: ours_path(X, y, screening=True, tol=args.tol)[0], args.repeat)
    path = timing.result
    l1s = np.array([m["l1"] for m in path])
    ref, _, _ = ours_path(X, y, screening=True, tol=args.ref_tol)
    p_star = np.array([m["primal"] for m in ref])
    ours = np.array([m["primal"] for m in path])
    Xc, yc, means = X - X.mean(axis=0), y - y.mean(), X.mean(axis=0)  # peers fit no intercept: centre

    def objectives(coefs: np.ndarray) -> np.ndarray:
        return np.array(
            [
                lasso_objective(X, y, coefs[:, k], float(y.mean() - means @ coefs[:, k]), l1)
                for k, l1 in enumerate(l1s)
            ]
        )

    out: dict[str, Any] = {
        "target_subopt": target,
        "ref_tol": args.ref_tol,
        "ours_tol": args.tol,
        "ours_cpu": timing.cpu_median,
        "ours_wall": timing.median,
        "ours_max_gap_rel": max(m["gap"] / m["primal"] for m in path),
        "ours_subopt": worst(relative_suboptimality(ours, p_star)),
    }
    for name, peer in lasso_peers().items():

        def build(tol: float | None, peer: Any = peer) -> Callable[[], np.ndarray]:
            return lambda: peer(Xc, yc, l1s, tol)

        def score(coefs: np.ndarray) -> tuple[float, float, dict[str, Any]]:
            obj = objectives(coefs)
            return float(obj.sum()), worst(relative_suboptimality(obj, p_star)), {}

        cal = calibrate(build, score, tol_ladder(1e-2, 1e-12, per_decade=2), target)
        tol = cal.chosen.tol
        peer_timing = time_call(build(tol), args.repeat)
        out[name] = {
            "tol": tol,
            "reached": cal.reached,
            "cpu": peer_timing.cpu_median,
            "wall": peer_timing.median,
            "subopt": score(peer_timing.result)[1],
            "calibration": [{"tol": q.tol, "subopt": q.subopt} for q in cal.points],
        }
        out[f"ratio_vs_{name}"] = timing.cpu_median / peer_timing.cpu_median
    if "celer" not in out:
        out["celer"] = "not installed (pip install celer)"
    return out


def core_path(
    x_file: Path, y_file: Path, n: int, *, screening: bool, tol: float, repeat: int
) -> dict[str, Any]:
    """The core example ``lasso_path`` on the dumped data: one JSON line per run, and the
    median CPU seconds of the runs (the counts are the same in every run)."""
    command = ["cargo", "run", "--release", "--quiet", "-p", "sdca-core", "--example", "lasso_path", "--"]
    setting = "on" if screening else "off"
    args = [str(x_file), str(y_file), str(n), str(repeat), setting, repr(tol)]
    out = subprocess.run(command + args, cwd=REPO, capture_output=True, text=True, check=True)
    runs = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {**runs[-1], "cpu": float(np.median([r["cpu"] for r in runs])), "runs": len(runs)}


def row_screening(args: argparse.Namespace) -> dict[str, Any]:
    """The ``lasso`` path with screening on and off, in the core (module docs)."""
    X, y = dense_problem()
    with tempfile.TemporaryDirectory() as tmp:
        x_file, y_file = Path(tmp) / "X.bin", Path(tmp) / "y.bin"
        X.astype("<f8").tofile(x_file)
        y.astype("<f8").tofile(y_file)
        return {
            setting: core_path(x_file, y_file, len(y), screening=on, tol=args.tol, repeat=args.repeat)
            for setting, on in [("on", True), ("off", False)]
        }


def row_sparse(args: argparse.Namespace) -> dict[str, Any]:
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


def report(results: dict[str, Any], machine: dict[str, Any], args: argparse.Namespace) -> str:
    """The results section of the ``lasso`` and ``screening`` rows present in ``results``."""
    lines = [
        "# Regularization paths (`benchmarks/paths.py`)",
        "",
        f"Commit {machine['git_commit']}; {machine['cpu']}, {machine['usable_cpus']} usable CPUs, load "
        f"average {machine['load_average'][0]:.1f} at the start; polars {machine['polars']}, scikit-learn "
        f"{machine['scikit-learn']}. Process CPU seconds, medians of {args.repeat} runs. Data: 200 x 5,000 "
        "Gaussian, 20 true features, seed 0; 100 `l1` values from `l1_max` to `1e-3 l1_max`, intercept.",
    ]
    if "lasso" in results:
        r = results["lasso"]
        lines += [
            "",
            "## 100-value Lasso path, dense p >> n",
            "",
            f"Each solver at the loosest tolerance (ladder: two per decade) whose worst relative "
            f"suboptimality over the 100 values reaches {r['target_subopt']:g}, against a reference "
            f"path certified by us to a relative gap of {r['ref_tol']:g}; ours certifies every value "
            f"to a relative duality gap of {r['ours_tol']:g} (worst certified: "
            f"{r['ours_max_gap_rel']:.1e}). Peers fit no intercept: they run on centred data, and "
            "their intercept is recovered from the means.",
            "",
            "| solver | tol | CPU s | ratio (ours / peer) | worst (P - P*) / P* |",
            "|---|---:|---:|---:|---:|",
            f"| polars-sdca `fit_path` | {r['ours_tol']:g} | {r['ours_cpu']:.2f} | "
            f"| {r['ours_subopt']:.1e} |",
        ]
        names = {"sklearn": "scikit-learn `lasso_path`", "celer": "celer `celer_path`"}
        for key, label in names.items():
            peer = r.get(key)
            if isinstance(peer, dict):
                missed = "" if peer["reached"] else " (missed)"
                lines.append(
                    f"| {label} | {peer['tol']:g} | {peer['cpu']:.2f}{missed} "
                    f"| **{r[f'ratio_vs_{key}']:.2f}** | {peer['subopt']:.1e} |"
                )
            else:
                lines.append(f"| {label} | | | | {peer} |")
    if "screening" in results:
        r = results["screening"]
        lines += [
            "",
            "## Gap Safe screening on vs off",
            "",
            "The same path in the core (example `lasso_path`, no Polars); entries visited are the "
            "stored matrix entries the fits' passes read (`Path::nnz_visited`), features screened "
            "the sum over the values of those left out at each fit's end (`Path::screened`; the "
            "closed-form zero model at `l1_max` counts every feature, screening or not).",
            "",
            "| screening | CPU s | entries visited | features screened | worst relative gap | converged |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for setting in ("on", "off"):
            s = r[setting]
            lines.append(
                f"| {setting} | {s['cpu']:.2f} | {s['nnz_visited']:.3g} | {s['screened']} "
                f"| {s['worst_gap_rel']:.1e} | {s['converged']} / {s['values']} |"
            )
        lines.append(
            f"| ratio on / off | {r['on']['cpu'] / r['off']['cpu']:.2f} "
            f"| {r['on']['nnz_visited'] / r['off']['nnz_visited']:.2f} | | | |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated: {', '.join(ROWS)}")
    parser.add_argument("--tol", type=float, default=1e-6, help="ours; the peers' target suboptimality")
    parser.add_argument("--ref-tol", type=float, default=1e-10, help="the reference path's certified gap")
    parser.add_argument(
        "--repeat", type=int, default=3, help="timed runs (medians) of the lasso and screening rows"
    )
    parser.add_argument("--n-rows", type=int, default=50_000, help="CoNLL token rows of the sparse row")
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--dry-run", action="store_true", help="print only (allowed on a dirty tree)")
    args = parser.parse_args()
    if dirty_tree() and not args.dry_run:
        raise SystemExit("the working tree has uncommitted changes: commit first, or pass --dry-run")
    machine = machine_info(0)
    results = {}
    for name in filter(None, args.rows.split(",")):
        results[name] = ROWS[name](args)
        print(name, json.dumps(results[name], indent=1), flush=True)
    text = report(results, machine, args)
    print(text)
    if args.dry_run:
        return
    machine["load_average_end"] = os.getloadavg()
    OUT.mkdir(exist_ok=True)
    record = {"machine": machine, "args": vars(args), "results": results}
    (OUT / "paths.json").write_text(json.dumps(record, indent=1, default=str))
    if {"lasso", "screening"} <= set(results):
        RESULTS.write_text(text)
    else:
        print(f"{RESULTS.name} not rewritten: it holds the lasso and screening rows together")


if __name__ == "__main__":
    main()
