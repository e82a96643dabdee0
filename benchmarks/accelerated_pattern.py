"""Accelerated vs plain Prox-SDCA as l2 shrinks: the pattern of Shalev-Shwartz & Zhang 2014 Figure 3.

Usage (from the repository root, plugin built with ``make build``)::

    python benchmarks/accelerated_pattern.py   # ~7 min on 2 idle cores; 13.5 at a load average of 7-11
    python benchmarks/accelerated_pattern.py --n-rows 50000 --max-epochs 200

Problem (the paper's): smooth hinge with smoothing 1, ``l1 = 1e-5``, ``l2`` in
{1e-6, 1e-7, 1e-8, 1e-9}, no intercept, on CoNLL-2003 English train tokens (203,621 rows,
94,204 CRFsuite-style attributes, unit-norm rows; label ``is_entity``, the harness's sparse
problem, ``cases.load_sparse``). Its ``1/(l2 n)`` spans 5 to 5,000, the range of the paper's
CCAT (1.3 to 1,280) and astro-ph (34 to 33,000).

For each ``l2``, ``solver="sdca"`` and ``solver="accelerated"`` with the same ``seed``:

1. **Passes to gap 1e-3.** One fit with ``tol=1e-3``, the *relative* certified duality gap
   (``gap <= 1e-3 * P(w)``), gap checked every pass, capped at ``--max-epochs`` passes; the table
   reports its ``epochs`` (every pass, the final certifying pass of the accelerated solver
   included), ``converged``, the relative gap and the objective of the returned coefficients,
   recomputed in numpy (``prox_common.objective``). One run each: pass counts are deterministic
   by seed; the wall time is given for information.
2. **Certified suboptimality against passes** (the plot, one panel per ``l2``): the bound on
   ``P(w_t) - P*`` that the stopping rule uses, divided by ``L``, the best certified lower bound
   on ``P*`` (the largest ``primal - gap`` of every fit of that ``l2``). Prox-SDCA: its
   ``gap_trace`` (one entry per pass, ``check_every=1``). Accelerated Prox-SDCA reports one entry
   per outer iteration, so its curve comes from the same fit capped at a geometric grid of pass
   budgets: a capped fit runs the same seeded trajectory and stops early, and its last
   ``gap_trace`` entry is the bound at the accelerated iterate after exactly that many passes.
   Both start from ``w = 0``, ``alpha = 0`` (gap ``P(0)``).

   Why not the objective itself, as the paper plots: per pass, the plugin reports the gap, not
   ``P(w_t)``; and a fit stopped by ``max_epochs`` before ``tol`` returns, for the accelerated
   solver, ``w(alpha)`` of its duals re-certified by plain SDCA (``solver/mod.rs``,
   ``certify_plain``), not the accelerated iterate ``w_t`` whose bound is in ``gap_trace``, and at
   a small ``l2`` that point is far worse (20,000 rows, ``l2 = 1e-7``, capped at 60 passes: the
   returned model has ``P = 0.233`` and gap 0.21, while ``gap_trace`` ends at 1.5e-4 for ``w_t``,
   with ``P*`` about 0.021), so objectives of capped fits would not show the solver's progress.

``solver="auto"`` is also asked which solver it would pick (a one-pass fit's ``solver`` field).

Writes ``benchmarks/accelerated_pattern.png``, the "accelerated" section of
``benchmarks/results_prox.md`` and the raw numbers to ``benchmarks/out/accelerated_pattern.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from cases import SparseProblem, load_sparse
from common import machine_info
from prox_common import HERE, machine_lines, objective, write_section

import polars_sdca as ps

OUT = HERE / "out"
SOLVERS = ("sdca", "accelerated")
START = time.perf_counter()


def log(msg: str) -> None:
    """Print a progress line with the elapsed time."""
    print(f"[{time.perf_counter() - START:7.1f}s] {msg}", flush=True)


def fit(p: SparseProblem, args: argparse.Namespace, l2: float, **opts: Any) -> dict[str, Any]:
    """One fit, timed; the model with its recomputed objective and wall time."""
    expr = ps.fit(
        "y",
        "features",
        loss="smooth_hinge",
        smoothing=args.smoothing,
        l1=args.l1,
        l2=l2,
        fit_intercept=False,
        n_features=p.n_features,
        seed=args.seed,
        check_every=1,
        **opts,
    ).alias("model")
    t0 = time.perf_counter()
    model: dict[str, Any] = p.df.select(expr).item()
    seconds = time.perf_counter() - t0
    w = np.asarray(model["coef"], dtype=np.float64)
    score = objective(p.x, p.y, w, loss="smooth_hinge", l2=l2, l1=args.l1, smoothing=args.smoothing)
    keep = ("solver", "epochs", "converged", "primal", "gap", "solved_gap", "status", "gap_trace")
    return {
        **{k: model[k] for k in keep},
        "objective": score,
        "seconds": seconds,
        "nnz": int(np.count_nonzero(w)),
    }


def budgets(limit: int, points: int) -> list[int]:
    """Integer pass budgets from 1 to ``limit``, about geometric, without repeats."""
    return sorted({round(b) for b in np.geomspace(1, max(limit, 1), points)})


def run_l2(p: SparseProblem, args: argparse.Namespace, l2: float) -> dict[str, Any]:
    """Everything measured at one ``l2``: the passes-to-tol fits and the two curves."""
    auto = fit(p, args, l2, solver="auto", tol=args.tol, max_epochs=1)["solver"]
    out: dict[str, Any] = {"l2": l2, "auto_picks": auto, "solvers": {}}
    fits = []
    for solver in SOLVERS:
        main = fit(p, args, l2, solver=solver, tol=args.tol, max_epochs=args.max_epochs)
        log(
            f"l2={l2:g} {solver}: {main['epochs']} passes, converged={main['converged']}, "
            f"gap/P={main['gap'] / main['primal']:.2e}, {main['seconds']:.1f}s"
        )
        if solver == "sdca":
            curve = [[k + 1, g] for k, g in enumerate(main["gap_trace"])]
        else:
            capped = [
                fit(p, args, l2, solver=solver, tol=args.tol, max_epochs=b)
                for b in budgets(min(main["epochs"] - 1, args.plot_passes), args.curve_points)
            ]
            fits += capped
            curve = [[c["epochs"], c["gap_trace"][-1]] for c in capped if c["gap_trace"]]
            if main["epochs"] <= args.plot_passes:
                curve.append([main["epochs"], main["gap"]])
        fits.append(main)
        out["solvers"][solver] = {"main": {k: v for k, v in main.items() if k != "gap_trace"}, "curve": curve}
    out["lower_bound"] = max(f["primal"] - f["gap"] for f in fits)
    out["p_zero"] = objective(
        p.x, p.y, np.zeros(p.n_features), loss="smooth_hinge", l2=l2, l1=args.l1, smoothing=args.smoothing
    )
    return out


def write_plot(results: dict[str, Any], path: Path) -> None:
    """One panel per l2: both solvers' certified relative suboptimality against passes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = results["l2"]
    fig, axes = plt.subplots(2, (len(runs) + 1) // 2, figsize=(11, 7.5), squeeze=False)
    for ax, run in zip(axes.ravel(), runs, strict=False):
        low = run["lower_bound"]
        for solver, style in zip(SOLVERS, ("-", "s-"), strict=True):
            main = run["solvers"][solver]["main"]
            passes, gaps = zip(*([0, run["p_zero"]], *run["solvers"][solver]["curve"]), strict=True)
            name = "Prox-SDCA" if solver == "sdca" else "Accelerated Prox-SDCA"
            label = f"{name}: {_passes(main)} passes to tol"
            ax.semilogy(passes, np.asarray(gaps) / low, style, ms=3, label=label)
        ax.axhline(results["config"]["tol"], color="grey", ls="--", lw=0.8)
        ax.set_xlim(0, results["config"]["plot_passes"])
        ax.set_title(f"l2 = {run['l2']:g}  (1/(l2 n) = {1 / (run['l2'] * results['n']):,.0f})")
        ax.set_xlabel("passes over the data")
        ax.set_ylabel("certified (P(w_t) - P*) / L")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(
        f"smooth hinge (smoothing {results['config']['smoothing']:g}), l1 = {results['config']['l1']:g}; "
        f"CoNLL-2003 tokens, {results['n']:,} x {results['n_features']:,}, unit-norm rows; "
        "L = best certified lower bound on P*; dashed: tol",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _passes(m: dict[str, Any]) -> str:
    return str(m["epochs"]) if m["converged"] else f"> {m['epochs']} (cap)"


def _reached(m: dict[str, Any]) -> str:
    return f"{m['gap'] / m['primal']:.1e}, {m['objective']:.6f}"


def write_table(results: dict[str, Any]) -> Path:
    """The "accelerated" section of results_prox.md."""
    cfg = results["config"]
    rows = "all rows" if cfg["n_rows"] is None else f"a seeded subsample of {cfg['n_rows']:,} rows"
    lines = [
        "## Accelerated vs plain Prox-SDCA (`benchmarks/accelerated_pattern.py`)",
        "",
        f"Smooth hinge (smoothing {cfg['smoothing']:g}), l1 = {cfg['l1']:g}, no intercept, CoNLL-2003 train "
        f"tokens ({results['n']:,} rows x {results['n_features']:,} features, unit-norm rows; "
        f"{rows}). "
        f"Passes to a certified **relative** duality gap <= {cfg['tol']:g} (the fit's `tol`), gap "
        f"checked every pass, at most {cfg['max_epochs']} passes; same seed ({cfg['seed']}) for both "
        "solvers. P(w) is recomputed from the returned coefficients; wall times are single runs on a "
        f"shared machine, for information only. The run took {results['elapsed_s'] / 60:.1f} min.",
        "",
        "| l2 | 1/(l2 n) | auto picks | Prox-SDCA passes | Accelerated passes | ratio | Prox-SDCA gap/P, "
        "P(w) | Accelerated gap/P, P(w) | wall s (plain / acc.) |",
        "|---:|---:|---|---:|---:|---:|---|---|---|",
    ]
    for run in results["l2"]:
        plain, acc = (run["solvers"][s]["main"] for s in SOLVERS)
        more = "" if plain["converged"] else "+"
        lines.append(
            f"| {run['l2']:g} | {1 / (run['l2'] * results['n']):,.0f} | {run['auto_picks']} | "
            f"{_passes(plain)} | {_passes(acc)} | {plain['epochs'] / acc['epochs']:.1f}{more} | "
            f"{_reached(plain)} | {_reached(acc)} | "
            f"{plain['seconds']:.1f} / {acc['seconds']:.1f} |"
        )
    lines += ["", "![accelerated pattern](accelerated_pattern.png)", "", *machine_lines(results["machine"])]
    return write_section("accelerated", "\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    """Run every l2, then write the JSON, the plot and the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-rows", type=int, default=None, help="seeded row subsample (default: all rows)")
    ap.add_argument("--l2", default="1e-6,1e-7,1e-8,1e-9", help="comma-separated l2 values")
    ap.add_argument("--l1", type=float, default=1e-5)
    ap.add_argument("--smoothing", type=float, default=1.0)
    ap.add_argument("--tol", type=float, default=1e-3, help="relative duality gap to reach")
    ap.add_argument("--max-epochs", type=int, default=1000, help="pass cap of the passes-to-tol fits")
    ap.add_argument("--plot-passes", type=int, default=100, help="x range of the plot (the paper's 100)")
    ap.add_argument("--curve-points", type=int, default=12, help="capped accelerated fits per panel")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    machine = machine_info(args.seed)
    log("loading CoNLL-2003 tokens and sparse attributes")
    p = load_sparse(args.n_rows, args.seed)
    norms = np.sqrt(np.asarray(p.x.multiply(p.x).sum(axis=1)).ravel())
    log(f"  {p.n:,} rows, {p.n_features:,} features, {p.nnz:,} non-zeros")
    log(f"  row norms in [{norms.min():.12f}, {norms.max():.12f}]")
    results: dict[str, Any] = {
        "config": vars(args),
        "n": p.n,
        "n_features": p.n_features,
        "l2": [run_l2(p, args, float(v)) for v in args.l2.split(",")],
    }
    machine["load_average_end"] = machine_info(args.seed)["load_average"]
    results["machine"] = machine
    results["elapsed_s"] = time.perf_counter() - START
    (OUT / "accelerated_pattern.json").write_text(json.dumps(results, indent=1, default=float))
    write_plot(results, HERE / "accelerated_pattern.png")
    table = write_table(results)
    log(f"wrote {OUT / 'accelerated_pattern.json'}, {HERE / 'accelerated_pattern.png'} and {table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
