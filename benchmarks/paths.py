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
* ``screening``: the ``lasso`` path with Gap Safe screening on and off, run by the core's
  example ``lasso_path`` (``cargo run --release -p sdca-core --example lasso_path``) on the same
  data, so that the CPU seconds are the solver's alone (medians of ``--repeat`` runs): the
  stored matrix entries the fits visited (``Path::nnz_visited``, a path model's
  ``nnz_visited``), the features screened summed over the values (``Path::screened``) and the
  worst relative gap.
* ``enet`` and ``l1_logistic``: 100-value paths on CoNLL tokens (``cases.load_sparse``,
  ``--n-rows`` rows, the full vocabulary), no intercept on either side: the elastic net
  (``l1_ratio`` 0.5, the squared loss) against scikit-learn's ``enet_path``, and L1-logistic
  (``l2 = 0``) against a loop of liblinear ``LogisticRegression(l1_ratio=1, C = 1 / (l1 n))``
  fits over the same grid; equal accuracy as in the ``lasso`` row (ours at ``tol``, the peer
  at the loosest tolerance of the ladder reaching the same worst suboptimality against our path
  certified to ``--ref-tol``). Each also runs ours with screening off: CPU seconds and the
  entries visited (``nnz_visited`` summed over the path) on and off.
* ``cv``: 5-fold cross-validation over 20 ``l2`` values on 2,000 groups of 60 rows x 5 features:
  one ``fit_groups(kind="cv")`` against a loop of scikit-learn ``LogisticRegressionCV`` over the
  groups, on the same folds (a fold column, ``PredefinedSplit``), the same fold problems (no
  intercept, ``C = 1 / (l2 n_train)``) and the same score (held-out log-loss); the largest
  difference of the two score curves and the share of groups where both choose the same value
  say that both did the same work. scikit-learn is timed on the first ``--peer-groups`` groups
  (about a second each) and its CPU seconds scaled to all groups; the report says so.

Our side's time is the ``select`` that returns the path as a one-row frame, from a frame built
beforehand (the peers get their numpy / scipy inputs built beforehand and return arrays);
turning the models into Python dicts happens outside the timings.

Keeps the last run of every row in ``benchmarks/results_paths.json``, committed beside the
results (``--rows`` replaces those it runs; a store under the ignored ``benchmarks/out/`` was lost
with a machine), and, once every row has a run, writes ``benchmarks/results_paths.md`` from them, each
section naming the commit it ran at; refuses a dirty tree unless ``--dry-run`` (which prints
this run's sections and writes nothing).
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
from threadpoolctl import threadpool_limits

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

STORE = HERE / "results_paths.json"
RESULTS = HERE / "results_paths.md"


def lasso_objective(X: np.ndarray, y: np.ndarray, w: np.ndarray, b: float, l1: float) -> float:
    r = X @ w + b - y
    return float(0.5 * np.mean(r * r) + l1 * np.abs(w).sum())


def ours_record(
    target: float, args: argparse.Namespace, timing: Any, path: list[dict[str, Any]], ours: Any, p_star: Any
) -> dict[str, Any]:
    """The fields of our side of a path row: its timing, certified gaps and suboptimality."""
    return {
        "target_subopt": target,
        "ref_tol": args.ref_tol,
        "ours_cpu": timing.cpu_median,
        "ours_wall": timing.median,
        "ours_max_gap_rel": max(m["gap"] / m["primal"] for m in path),
        "ours_subopt": worst(relative_suboptimality(ours, p_star)),
    }


def dense_problem(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, p = 200, 5000
    X = rng.normal(size=(n, p))
    w = np.zeros(p)
    w[rng.choice(p, 20, replace=False)] = rng.normal(size=20) * 2
    return X, X @ w + rng.normal(size=n)


def models(out: pl.DataFrame) -> list[dict[str, Any]]:
    """A path's models as Python dicts. Outside the timings: our result is the one-row frame (the
    models as data, as the peers' is a numpy array); turning 100 coefficient vectors into Python
    floats costs more than some fits (9.4 million floats on the sparse rows)."""
    return list(out.item())


def ours_path(frame: pl.DataFrame, *, screening: bool, tol: float) -> pl.DataFrame:
    expr = ps.fit_path("y", "x", loss="squared", l2=0.0, n_l1=100, tol=tol, screening=screening)
    return frame.select(expr)


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


def calibrated_peer(
    build: Callable[[float | None], Callable[[], Any]],
    score: Callable[[Any], tuple[float, float, dict[str, Any]]],
    ladder: list[float],
    target: float,
    repeat: int,
    max_point_seconds: float = 120.0,
) -> dict[str, Any]:
    """A peer at the loosest tolerance of ``ladder`` reaching ``target`` (``common.calibrate``),
    timed ``repeat`` times there: its record for the JSON and the report."""
    cal = calibrate(build, score, ladder, target, max_point_seconds)
    timing = time_call(build(cal.chosen.tol), repeat)
    return {
        "tol": cal.chosen.tol,
        "reached": cal.reached,
        "cpu": timing.cpu_median,
        "wall": timing.median,
        "subopt": score(timing.result)[1],
        "calibration": [{"tol": q.tol, "subopt": q.subopt, "seconds": q.seconds} for q in cal.points],
    }


def row_lasso(args: argparse.Namespace) -> dict[str, Any]:
    """Ours at ``tol`` (every value certified to that relative gap) against each peer at its
    loosest tolerance whose worst relative suboptimality over the path reaches the same number,
    judged against a reference path certified to ``--ref-tol`` (``common.calibrate``)."""
    X, y = dense_problem()
    target = args.tol
    frame = pl.DataFrame({"x": X, "y": y})
    timing = time_call(lambda: ours_path(frame, screening=True, tol=args.tol), args.repeat)
    path = models(timing.result)
    l1s = np.array([m["l1"] for m in path])
    ref = models(ours_path(frame, screening=True, tol=args.ref_tol))
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

    out: dict[str, Any] = {"ours_tol": args.tol, **ours_record(target, args, timing, path, ours, p_star)}
    for name, peer in lasso_peers().items():

        def build(tol: float | None, peer: Any = peer) -> Callable[[], np.ndarray]:
            return lambda: peer(Xc, yc, l1s, tol)

        def score(coefs: np.ndarray) -> tuple[float, float, dict[str, Any]]:
            obj = objectives(coefs)
            return float(obj.sum()), worst(relative_suboptimality(obj, p_star)), {}

        out[name] = calibrated_peer(build, score, tol_ladder(1e-2, 1e-12, per_decade=2), target, args.repeat)
        out[f"ratio_vs_{name}"] = timing.cpu_median / out[name]["cpu"]
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


# The parts of `Path::visits` the example prints: sweeps over the working sets, candidate
# moves, Newton products, the inner solves' checks, refreshes, the seed's products, the outer
# checks and the completions of the certificates.
VISIT_PARTS = ("sweeps", "moves", "newton", "inner_checks", "refresh", "seed", "checks", "completion")

SPARSE_RATIO = 0.5  # the elastic-net row's l1_ratio (l2 = l1 (1 - ratio) / ratio)


def sparse_path(p: Any, loss: str, *, tol: float, screening: bool = True) -> pl.DataFrame:
    """Ours on the sparse rows: 100 values from ``l1_max`` to ``1e-3 l1_max``, no intercept
    (the peers' objective), the elastic net tied by ``SPARSE_RATIO``, L1-logistic at ``l2 = 0``."""
    penalty: dict[str, Any] = {"l1_ratio": SPARSE_RATIO} if loss == "squared" else {"l2": 0.0}
    expr = ps.fit_path(
        "y",
        "features",
        loss=loss,
        n_l1=100,
        n_features=p.n_features,
        fit_intercept=False,
        tol=tol,
        screening=screening,
        **penalty,
    )
    return p.df.select(expr)


def sparse_objective(loss: str, X: Any, y: np.ndarray, w: np.ndarray, l1: float, l2: float) -> float:
    a = X @ w
    if loss == "squared":
        data = 0.5 * np.mean((a - y) ** 2)
    else:
        # The labels are -1 / +1 (``cases.load_sparse``); any positive label is the positive class.
        data = np.mean(np.logaddexp(0.0, -np.where(y > 0, 1.0, -1.0) * a))
    return float(data + l1 * np.abs(w).sum() + 0.5 * l2 * (w @ w))


def sparse_peer(
    loss: str, X: Any, y: np.ndarray, l1s: np.ndarray
) -> Callable[[float | None], Callable[[], Any]]:
    """scikit-learn ``enet_path`` (squared) or a loop of liblinear L1-logistic fits, at ``tol``;
    the callable returns the coefficients, features x values."""
    from sklearn.linear_model import LogisticRegression, enet_path

    n = X.shape[0]

    def build(tol: float | None) -> Callable[[], Any]:
        if loss == "squared":
            return lambda: enet_path(
                X, y, l1_ratio=SPARSE_RATIO, alphas=l1s / SPARSE_RATIO, tol=tol, max_iter=100_000
            )[1]

        def loop() -> np.ndarray:
            return np.column_stack(
                [
                    LogisticRegression(
                        l1_ratio=1.0,
                        C=1.0 / (l1 * n),
                        solver="liblinear",
                        fit_intercept=False,
                        tol=tol,
                        max_iter=100_000,
                    )
                    .fit(X, y)
                    .coef_.ravel()
                    for l1 in l1s
                ]
            )

        return loop

    return build


def row_sparse_loss(args: argparse.Namespace, loss: str) -> dict[str, Any]:
    """The ``enet`` / ``l1_logistic`` rows: ours at ``tol`` against the peer at the loosest
    tolerance of the ladder whose worst relative suboptimality over the path reaches ``tol``,
    against our path certified to ``--ref-tol``; then ours with screening off."""
    from cases import load_sparse

    p = load_sparse(args.n_rows, 0)
    X = p.x.tocsc() if loss == "squared" else p.x
    timing = time_call(lambda: sparse_path(p, loss, tol=args.tol), args.repeat)
    path = models(timing.result)
    l1s = np.array([m["l1"] for m in path])
    l2s = np.array([m["l2"] for m in path])
    ref = models(sparse_path(p, loss, tol=args.ref_tol))
    p_star = np.array([m["primal"] for m in ref])
    ours = np.array([m["primal"] for m in path])

    def objectives(coefs: np.ndarray) -> np.ndarray:
        return np.array(
            [sparse_objective(loss, X, p.y, coefs[:, k], l1s[k], l2s[k]) for k in range(len(l1s))]
        )

    # The peers are scored by this objective: it must be the one our certificates are about.
    mismatch = worst(np.abs(objectives(np.column_stack([m["coef"] for m in path])) - ours) / ours)
    if not mismatch <= 1e-9:
        raise SystemExit(
            f"{loss}: the benchmark's objective differs from our primal by {mismatch:.1e} (relative)"
        )

    def score(coefs: np.ndarray) -> tuple[float, float, dict[str, Any]]:
        obj = objectives(coefs)
        return float(obj.sum()), worst(relative_suboptimality(obj, p_star)), {}

    build = sparse_peer(loss, X, p.y, l1s)
    peer = calibrated_peer(build, score, tol_ladder(1e-2, 1e-10, per_decade=2), args.tol, args.repeat, 300.0)
    off = time_call(lambda: sparse_path(p, loss, tol=args.tol, screening=False), args.repeat)
    off_path = models(off.result)
    return {
        "rows": p.n,
        "features": p.n_features,
        "nnz": int(p.x.nnz),
        **ours_record(args.tol, args, timing, path, ours, p_star),
        "objective_check": mismatch,
        "peer": peer,
        "ratio": timing.cpu_median / peer["cpu"],
        "screening": {
            "on_cpu": timing.cpu_median,
            "off_cpu": off.cpu_median,
            "on_nnz_visited": sum(m["nnz_visited"] for m in path),
            "off_nnz_visited": sum(m["nnz_visited"] for m in off_path),
            "screened": sum(m["screened"] for m in path),
            "off_max_gap_rel": max(m["gap"] / m["primal"] for m in off_path),
        },
    }


def row_enet(args: argparse.Namespace) -> dict[str, Any]:
    return row_sparse_loss(args, "squared")


def row_l1_logistic(args: argparse.Namespace) -> dict[str, Any]:
    return row_sparse_loss(args, "logistic")


def row_cv(args: argparse.Namespace) -> dict[str, Any]:
    """One ``fit_groups(kind="cv")`` against a loop of ``LogisticRegressionCV`` over the groups,
    on the same folds (a fold column; ``PredefinedSplit``) and the same fold problems (no
    intercept; ``C = 1 / (l2 n_train)``), scored by held-out log-loss on both sides."""
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.model_selection import PredefinedSplit

    rng = np.random.default_rng(1)
    groups, rows, d, k = args.groups, 60, 5, 5
    g = np.repeat(np.arange(groups), rows)
    X = rng.normal(size=(groups * rows, d))
    truth = rng.normal(size=(groups, d))
    y = (np.einsum("ij,ij->i", X, truth[g]) + rng.normal(size=g.size) > 0).astype(np.int64)
    fold = np.tile(np.arange(rows) % k, groups)
    frame = pl.DataFrame({"g": g, "y": y, "fold": fold, **{f"f{j}": X[:, j] for j in range(d)}})
    feats = [f"f{j}" for j in range(d)]
    n_train = rows - rows // k
    l2s = np.logspace(-4, 2, 20)[::-1]
    expr = ps.fit_groups(
        "y",
        feats,
        by="g",
        kind="cv",
        l2=list(l2s),
        fold_column="fold",
        scoring="log_loss",
        fit_intercept=False,
        tol=args.cv_tol,
    )
    timing = time_call(lambda: frame.select(expr), args.repeat)
    ours = timing.result.unnest("y")
    cs = 1.0 / (l2s * n_train)
    split = PredefinedSplit(fold[:rows])

    peer_groups = min(groups, args.peer_groups)

    def loop() -> np.ndarray:
        scores = []
        for j in range(peer_groups):
            sl = slice(j * rows, (j + 1) * rows)
            est = LogisticRegressionCV(
                Cs=cs, cv=split, scoring="neg_log_loss", fit_intercept=False, l1_ratios=(0.0,)
            ).fit(X[sl], y[sl])
            scores.append(-np.asarray(est.scores_[1]).reshape(k, -1).mean(axis=0))
        return np.array(scores)

    peer = time_call(loop, 1, warmup=0)
    # Both grids run l2 decreasing (scikit-learn keeps the order of the Cs it is given).
    ours_scores = np.array(ours.get_column("y").struct.field("mean").to_list())[:peer_groups]
    sklearn_cpu = peer.cpu_median * groups / peer_groups
    return {
        "groups": groups,
        "peer_groups": peer_groups,
        "ours_cpu": timing.cpu_median,
        "ours_wall": timing.median,
        "sklearn_cpu": sklearn_cpu,
        "sklearn_cpu_measured": peer.cpu_median,
        "ratio": timing.cpu_median / sklearn_cpu,
        "max_abs_score_diff": float(np.abs(ours_scores - peer.result).max()),
        "same_choice": float(np.mean(ours_scores.argmin(axis=1) == peer.result.argmin(axis=1))),
    }


ROWS = {
    "lasso": row_lasso,
    "screening": row_screening,
    "enet": row_enet,
    "l1_logistic": row_l1_logistic,
    "cv": row_cv,
}


def provenance(run: dict[str, Any]) -> str:
    """The line naming the commit, machine and load of one row's run."""
    m = run["machine"]
    return (
        f"Run of commit {m['git_commit']} ({m.get('date', '?')}), load average "
        f"{m['load_average'][0]:.1f} at the start and {m['load_average_end'][0]:.1f} at the end."
    )


def report(runs: dict[str, dict[str, Any]]) -> str:
    """The results file from the latest run of every row (``runs``: row name to its result,
    machine and arguments); each section names the commit it ran at."""
    results = {name: run["result"] for name, run in runs.items()}
    machine = next(iter(runs.values()))["machine"]
    repeat = next(iter(runs.values()))["args"]["repeat"]
    lines = [
        "# Regularization paths (`benchmarks/paths.py`)",
        "",
        f"{machine['cpu']}, {machine['usable_cpus']} usable CPUs; polars {machine['polars']}, "
        f"scikit-learn {machine['scikit-learn']}. Process CPU seconds, medians of {repeat} runs, BLAS "
        "on one thread. Each section names the commit it ran at (`--rows` reruns some rows and keeps "
        "the others' last runs). Data of the Lasso rows: 200 x 5,000 Gaussian, 20 true features, "
        "seed 0; 100 `l1` values from `l1_max` to `1e-3 l1_max`, intercept.",
    ]
    if "lasso" in results:
        r = results["lasso"]
        lines += [
            "",
            "## 100-value Lasso path, dense p >> n",
            "",
            provenance(runs["lasso"]),
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
            provenance(runs["screening"]),
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
        if all(part in r["on"] for part in VISIT_PARTS):
            lines += [
                "",
                "Where the entries went (`Path::visits`, millions, summed over the values):",
                "",
                "| screening | " + " | ".join(VISIT_PARTS) + " |",
                "|---|" + "---:|" * len(VISIT_PARTS),
            ]
            for setting in ("on", "off"):
                parts = " | ".join(f"{r[setting][part] / 1e6:.1f}" for part in VISIT_PARTS)
                lines.append(f"| {setting} | {parts} |")
    sparse = {
        "enet": ("Elastic-net path (`l1_ratio` 0.5)", "scikit-learn `enet_path`"),
        "l1_logistic": ("L1-logistic path (`l2 = 0`)", "liblinear `LogisticRegression` loop"),
    }
    for key, (title, label) in sparse.items():
        if key not in results:
            continue
        r = results[key]
        peer, sc = r["peer"], r["screening"]
        missed = "" if peer["reached"] else " (missed)"
        lines += [
            "",
            f"## {title}, sparse tokens",
            "",
            provenance(runs[key]),
            "",
            f"CoNLL-2003 tokens ({r['rows']:,} rows x {r['features']:,} attributes, {r['nnz']:,} "
            f"non-zeros), 100 values from `l1_max` to `1e-3 l1_max`, no intercept on either side. "
            f"The peer at the loosest tolerance (ladder: two per decade) whose worst relative "
            f"suboptimality over the 100 values reaches {r['target_subopt']:g}, against our path "
            f"certified to a relative gap of {r['ref_tol']:g}.",
            "",
            "| solver | tol | CPU s | ratio (ours / peer) | worst (P - P*) / P* |",
            "|---|---:|---:|---:|---:|",
            f"| polars-sdca `fit_path` | {r['target_subopt']:g} | {r['ours_cpu']:.2f} | "
            f"| {r['ours_subopt']:.1e} |",
            f"| {label} | {peer['tol']:g} | {peer['cpu']:.2f}{missed} | **{r['ratio']:.2f}** "
            f"| {peer['subopt']:.1e} |",
            "",
            f"Screening on / off, same path: CPU {sc['on_cpu']:.2f} / {sc['off_cpu']:.2f} s "
            f"(**{sc['on_cpu'] / sc['off_cpu']:.2f}**), entries visited {sc['on_nnz_visited']:.3g} / "
            f"{sc['off_nnz_visited']:.3g} (**{sc['on_nnz_visited'] / sc['off_nnz_visited']:.2f}**), "
            f"features screened {sc['screened']:,} (summed over the values).",
        ]
    if "cv" in results:
        r = results["cv"]
        lines += [
            "",
            "## Cross-validation per group",
            "",
            provenance(runs["cv"]),
            "",
            f"{r['groups']:,} groups of 60 rows x 5 features; 5 folds given by a column (the same "
            "`PredefinedSplit` for scikit-learn), 20 `l2` values, held-out log-loss, no intercept, "
            'the same fold problems (`C = 1 / (l2 n_train)`). One `fit_groups(kind="cv")` '
            f"against a loop of `LogisticRegressionCV` over the groups, timed on the first "
            f"{r['peer_groups']:,} groups ({r['sklearn_cpu_measured']:.1f} CPU s) and scaled to all "
            "(the groups are alike); scores compared on those groups.",
            "",
            "| ours CPU s | scikit-learn CPU s (scaled) | ratio | largest score difference | same choice |",
            "|---:|---:|---:|---:|---:|",
            f"| {r['ours_cpu']:.2f} | {r['sklearn_cpu']:.1f} | **{r['ratio']:.3f}** "
            f"| {r['max_abs_score_diff']:.1e} | {r['same_choice']:.1%} |",
        ]
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
    parser.add_argument(
        "--peer-groups", type=int, default=100, help="cv row: groups scikit-learn is timed on (scaled up)"
    )
    parser.add_argument("--cv-tol", type=float, default=1e-6, help="ours in the cv row (relative gap)")
    parser.add_argument("--dry-run", action="store_true", help="print only (allowed on a dirty tree)")
    args = parser.parse_args()
    if dirty_tree() and not args.dry_run:
        raise SystemExit("the working tree has uncommitted changes: commit first, or pass --dry-run")
    machine = machine_info(0)
    machine["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results = {}
    # One BLAS / OpenMP thread: idle BLAS threads spinning add CPU seconds to a peer's count
    # (scikit-learn's enet_path measured 6.9 CPU s in 3.5 s of wall time on 2 cores).
    with threadpool_limits(1):
        for name in filter(None, args.rows.split(",")):
            results[name] = ROWS[name](args)
            print(name, json.dumps(results[name], indent=1), flush=True)
    machine["load_average_end"] = os.getloadavg()
    fresh = {name: {"result": r, "machine": machine, "args": vars(args)} for name, r in results.items()}
    print(report(fresh))
    if args.dry_run:
        return
    # The last run of every row (this run's rows replace theirs).
    runs = json.loads(STORE.read_text()).get("runs", {}) if STORE.exists() else {}
    runs.update(json.loads(json.dumps(fresh, default=str)))
    STORE.write_text(json.dumps({"runs": runs}, indent=1))
    if set(ROWS) <= set(runs):
        RESULTS.write_text(report({name: runs[name] for name in ROWS}))
    else:
        missing = ", ".join(sorted(set(ROWS) - set(runs)))
        print(f"{RESULTS.name} not rewritten: no run of {missing} yet ({STORE.name})")


if __name__ == "__main__":
    main()
