"""A warm-started path over 10 decreasing l1 values against 10 cold fits: passes and wall time.

Usage (from the repository root, plugin built with ``make build``)::

    python benchmarks/warm_path.py   # ~5 min on 2 idle cores; 12 at a load average of 9-11
    python benchmarks/warm_path.py --repeat 5 --n-rows 50000

Data: CoNLL-2003 English train tokens (203,621 rows, 94,204 unit-norm sparse attributes, label
``is_entity`` in {-1, +1}; the harness's sparse problem, ``cases.load_sparse``), no intercept.

Configurations, fixed before any measurement: logistic with ``l2 = 1e-4`` (the l2 of the
harness's sparse case), logistic with ``l2 = 1e-6`` (an elastic net close to the Lasso), and the
squared-loss Lasso (``l2 = 0``, solved through the reduction of Shalev-Shwartz & Zhang 2012 section 3.2).
Each path has ``l1_k = l1_max * geomspace(0.5, 1e-3, 10)``, where ``l1_max = ||X^T a0||_inf / n``
with ``a0 = -phi'(0)`` is the smallest ``l1`` whose optimum is ``w = 0``; ``tol = 1e-6`` (the
default relative gap), ``solver="auto"``, the same seed.

* **cold**: each ``l1`` from ``w = 0``, ``alpha = 0``;
* **warm**: the first ``l1`` cold, then each fit with ``warm_start=`` the previous model (the
  one-row model frame, as a user would pass it).

The two paths of a configuration alternate, ``--repeat`` times (default 3) after one untimed
warm-up fit; the table gives the median of the path totals (wall time, Polars columns to model)
and the total passes (deterministic by seed). Each pair of fits must reach the same optimum:
``|P_cold - P_warm| <= gap_cold + gap_warm``, with ``P`` recomputed from the coefficients.

Why a warm start may not pay is measured too: a warm start sets ``alpha_i = -phi'(x_i . w_prev)``
(the previous model's duals); the table gives the duality gap at that start, for the problem
actually solved (``l2`` or the Lasso's ``l2_used``), next to the cold start's gap ``P(0)``.
Plain SDCA starts from ``w(alpha) = soft(X^T alpha / (l2 n), l1 / l2)``, the accelerated solver
from ``w_prev`` (``solver/mod.rs``, ``Warm``; ``accelerated.rs``), both with the dual value
``D(alpha)``.

Writes the "warm" section of ``benchmarks/results_prox.md`` and ``benchmarks/out/warm_path.json``.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from typing import Any

import numpy as np
import polars as pl
from cases import SparseProblem, load_sparse
from common import FloatArray, machine_info, time_once
from prox_common import HERE, ProxLoss, machine_lines, objective, write_section
from scipy.special import expit, xlogy

import polars_sdca as ps

OUT = HERE / "out"
CONFIGS: tuple[tuple[ProxLoss, float], ...] = (("logistic", 1e-4), ("logistic", 1e-6), ("squared", 0.0))
START = time.perf_counter()


def log(msg: str) -> None:
    """Print a progress line with the elapsed time."""
    print(f"[{time.perf_counter() - START:7.1f}s] {msg}", flush=True)


def neg_derivative(a: FloatArray, y: FloatArray, loss: ProxLoss) -> FloatArray:
    """``alpha = -phi'(a)``: the duals a warm start gives every row (DESIGN.md section 3)."""
    return y * expit(-y * a) if loss == "logistic" else y - a


def start_gap(
    p: SparseProblem, loss: ProxLoss, l2: float, l1: float, w_prev: FloatArray, solver: str
) -> float:
    """Duality gap at a warm start from ``w_prev`` for the elastic net with weight ``l2 > 0``."""
    n = p.n
    alpha = neg_derivative(np.asarray(p.x @ w_prev), p.y, loss)
    if loss == "logistic":
        b = p.y * alpha
        conj = -(xlogy(b, b) + xlogy(1.0 - b, 1.0 - b))
    else:
        conj = alpha * p.y - 0.5 * alpha**2
    v = np.asarray(p.x.T @ alpha) / (l2 * n)
    w_alpha = np.sign(v) * np.maximum(np.abs(v) - l1 / l2, 0.0)
    dual = float(conj.mean() - 0.5 * l2 * (w_alpha @ w_alpha))
    w_start = w_prev if solver == "accelerated" else w_alpha
    return objective(p.x, p.y, w_start, loss=loss, l2=l2, l1=l1) - dual


def run_config(p: SparseProblem, loss: ProxLoss, l2: float, args: argparse.Namespace) -> dict[str, Any]:
    """Time both paths of one configuration and check that they agree."""
    a0 = neg_derivative(np.zeros(p.n), p.y, loss)
    l1_max = float(np.abs(p.x.T @ a0).max()) / p.n
    path = [float(v) for v in l1_max * np.geomspace(0.5, 1e-3, args.steps)]
    opts = {"loss": loss, "l2": l2, "tol": args.tol, "max_epochs": args.max_epochs, "fit_intercept": False}

    def fit(l1: float, warm: pl.DataFrame | None) -> pl.DataFrame:
        extra = {} if warm is None else {"warm_start": warm}
        expr = ps.fit("y", "features", l1=l1, n_features=p.n_features, seed=args.seed, **opts, **extra)
        return p.df.select(expr.alias("model"))

    def one_path(warm: bool) -> tuple[float, list[pl.DataFrame]]:
        models: list[pl.DataFrame] = []
        seconds = 0.0
        for l1 in path:
            previous = models[-1] if warm and models else None
            timing = time_once(functools.partial(fit, l1, previous))
            seconds += timing.median
            models.append(timing.result)
        return seconds, models

    fit(path[0], None)  # warm-up: plugin loading, first touch of the data
    walls: dict[str, list[float]] = {"cold": [], "warm": []}
    models: dict[str, list[pl.DataFrame]] = {}
    for _ in range(args.repeat):
        for kind in ("cold", "warm"):
            seconds, models[kind] = one_path(kind == "warm")
            walls[kind].append(seconds)
        log(f"{loss} l2={l2:g}: cold {walls['cold'][-1]:.1f}s, warm {walls['warm'][-1]:.1f}s")
    steps = []
    for k, l1 in enumerate(path):
        cold, warm = (models[kind][k]["model"][0] for kind in ("cold", "warm"))
        p_cold, p_warm = (
            objective(p.x, p.y, np.asarray(m["coef"]), loss=loss, l2=l2, l1=l1) for m in (cold, warm)
        )
        step: dict[str, Any] = {
            "l1": l1,
            "nnz": int(np.count_nonzero(cold["coef"])),
            "solver": warm["solver"],
            "epochs_cold": cold["epochs"],
            "epochs_warm": warm["epochs"],
            "converged": bool(cold["converged"] and warm["converged"]),
            "objective_cold": p_cold,
            "objective_warm": p_warm,
            "agreement": abs(p_cold - p_warm) / max(cold["gap"] + warm["gap"], 1e-300),
            "start_gap_cold": objective(p.x, p.y, np.zeros(p.n_features), loss=loss, l2=l2, l1=l1),
        }
        if k > 0:
            w_prev = np.asarray(models["warm"][k - 1]["model"][0]["coef"])
            step["start_gap_warm"] = start_gap(p, loss, warm["l2_used"], l1, w_prev, warm["solver"])
        steps.append(step)
    return {
        "loss": loss,
        "l2": l2,
        "l1_max": l1_max,
        "steps": steps,
        "wall_cold": walls["cold"],
        "wall_warm": walls["warm"],
        "epochs_cold": sum(s["epochs_cold"] for s in steps),
        "epochs_warm": sum(s["epochs_warm"] for s in steps),
    }


def write_table(results: dict[str, Any]) -> None:
    """The "warm" section of results_prox.md."""
    cfg = results["config"]
    rows = "all rows" if cfg["n_rows"] is None else f"a seeded subsample of {cfg['n_rows']:,} rows"
    lines = [
        "## Warm-started l1 path vs cold fits (`benchmarks/warm_path.py`)",
        "",
        f"CoNLL-2003 train tokens ({results['n']:,} rows x {results['n_features']:,} features, unit-norm "
        f'rows; {rows}), label `is_entity`, no intercept, `tol = {cfg["tol"]:g}`, `solver="auto"`. '
        f"{cfg['steps']} values `l1 = l1_max * geomspace(0.5, 1e-3)`; warm: each fit from the previous "
        f"model. Wall time: median over {cfg['repeat']} runs of the path total (Polars columns to "
        f"models), cold and warm alternating; passes are deterministic. The run took "
        f"{results['elapsed_s'] / 60:.1f} min.",
        "",
        "| loss | l2 | solver | passes cold | passes warm | wall s cold | wall s warm | warm / cold (wall) "
        "| max \\|P_cold - P_warm\\| / (gap_cold + gap_warm) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for c in results["configs"]:
        cold, warm = statistics.median(c["wall_cold"]), statistics.median(c["wall_warm"])
        solvers = "/".join(sorted({s["solver"] for s in c["steps"]}))
        agreement = max(s["agreement"] for s in c["steps"])
        lines.append(
            f"| {c['loss']} | {c['l2']:g} | {solvers} | {c['epochs_cold']} | {c['epochs_warm']} | "
            f"{cold:.2f} | {warm:.2f} | **{warm / cold:.2f}** | {agreement:.2f} |"
        )
    lines += [
        "",
        "Per step: passes cold / warm, and the duality gap at the start of the fit (cold: `P(0)`; warm: "
        "at the previous model's duals, for the problem solved, divided by the cold one).",
        "",
        "| loss | l2 | l1 | non-zeros | passes cold / warm | warm start gap / cold start gap |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for c in results["configs"]:
        for s in c["steps"]:
            ratio = f"{s['start_gap_warm'] / s['start_gap_cold']:.3g}" if "start_gap_warm" in s else "(cold)"
            lines.append(
                f"| {c['loss']} | {c['l2']:g} | {s['l1']:.3g} | {s['nnz']} | {s['epochs_cold']} / "
                f"{s['epochs_warm']} | {ratio} |"
            )
    lines += ["", *machine_lines(results["machine"])]
    write_section("warm", "\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    """Run every configuration, then write the JSON and the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-rows", type=int, default=None, help="seeded row subsample (default: all rows)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each path (median reported)")
    ap.add_argument("--steps", type=int, default=10, help="l1 values on the path")
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--max-epochs", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    machine = machine_info(args.seed)
    log("loading CoNLL-2003 tokens and sparse attributes")
    p = load_sparse(args.n_rows, args.seed)
    log(f"  {p.n:,} rows, {p.n_features:,} features, {p.nnz:,} non-zeros")
    results: dict[str, Any] = {
        "config": vars(args),
        "n": p.n,
        "n_features": p.n_features,
        "configs": [run_config(p, loss, l2, args) for loss, l2 in CONFIGS],
    }
    machine["load_average_end"] = machine_info(args.seed)["load_average"]
    results["machine"] = machine
    results["elapsed_s"] = time.perf_counter() - START
    (OUT / "warm_path.json").write_text(json.dumps(results, indent=1, default=float))
    write_table(results)
    log(f"wrote {OUT / 'warm_path.json'} and the warm section of {HERE / 'results_prox.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
