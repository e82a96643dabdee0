"""Issue 17's goal rows: multiclass fits against liblinear's Crammer-Singer and lbfgs / saga.

Usage (from the repository root, plugin built with ``make build``, clean tree)::

    python benchmarks/multiclass_goals.py                          # every row (about an hour)
    python benchmarks/multiclass_goals.py --rows letter            # the small dense many-class set only
    python benchmarks/multiclass_goals.py --rows fashion:multinomial:1e-06  # one row; others kept
    python benchmarks/multiclass_goals.py --rows letter --dry-run  # a dirty tree: print, write nothing

Data: the letter-recognition set (20,000 x 16, 26 classes; ``LetterRecognition.rda`` of the
Debian package ``r-cran-mlbench``, read with the PyPI package ``rdata``), features standardized;
Fashion-MNIST (60,000 x 784, 10 classes, grey levels / 255). No intercept on either side, so the
problems are identical (``C = 1/(l2 n)``; see ``benchmarks/multiclass.py``).

Rows (the issue's): Crammer-Singer on letter at ``l2 = 1e-3`` and on Fashion-MNIST at ``1e-2``
and ``1e-3`` against ``LinearSVC(multi_class="crammer_singer")``; multinomial on letter at
``l2 = 1e-4`` and on Fashion-MNIST at ``1e-4`` and ``1e-6`` against ``LogisticRegression``
(``lbfgs``, ``saga``). A reference fit of ours at ``tol = target / 10`` certifies a lower bound
``D <= P*`` (its dual value). Each solver's tolerance is then walked from loose to tight and
stops at the first fit whose coefficients reach ``(P - D) / D <= target`` (``--target``,
default 1e-6; an upper bound on the true ``(P - P*) / P*``): the row reports the process CPU
seconds of that fit (in hindsight, favouring every side alike; BLAS limited to one thread,
polars-sdca on one thread). A ladder also stops, missed, once its fits have used ``--budget``
CPU seconds. Ratios are ours over the best peer.

Rows are named ``DATA:LOSS:L2`` (``fashion:multinomial:1e-06``); ``--rows`` takes names or
their prefixes (``fashion``, ``fashion:multiclass_hinge``). A run keeps the other rows' last runs
(``benchmarks/results_multiclass_goals.json``, committed with the table: a store under the ignored
``benchmarks/out/`` was lost with a machine, and a one-row run would then have dropped every other
row), and ``benchmarks/results_multiclass_goals.md`` names, per row, the commit, date and load
of the run it comes from (the long Fashion-MNIST rows can then run in separate quiet windows).
Refuses a dirty tree unless ``--dry-run`` (which writes nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from common import machine_info
from scipy.special import logsumexp
from threadpoolctl import threadpool_limits

import polars_sdca as ps
from polars_sdca.datasets import _debian_package, load_fashion_mnist

HERE = Path(__file__).resolve().parent
STORE = HERE / "results_multiclass_goals.json"
RESULTS = HERE / "results_multiclass_goals.md"
ROWS: list[tuple[str, str, float, tuple[str, ...]]] = [
    ("letter", "multiclass_hinge", 1e-3, ("liblinear",)),
    ("letter", "multinomial", 1e-4, ("lbfgs",)),
    ("fashion", "multiclass_hinge", 1e-2, ("liblinear",)),
    ("fashion", "multiclass_hinge", 1e-3, ("liblinear",)),
    ("fashion", "multinomial", 1e-4, ("lbfgs", "saga")),
    ("fashion", "multinomial", 1e-6, ("lbfgs", "saga")),
]
LADDER = {
    "polars-sdca": [1e-2, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6, 3e-7, 1e-7, 1e-8],
    "liblinear": [1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 1e-5, 1e-6],
    "lbfgs": [1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-10],
    "saga": [1e-3, 1e-4, 1e-5, 1e-6],
}
MAX_ITER = {"lbfgs": 20_000, "saga": 300}


def dirty() -> bool:
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=HERE, capture_output=True, text=True
    )
    return bool(out.stdout.strip()) or out.returncode != 0


def load(name: str) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    """The frame (``y``, ``features``) and numpy copies."""
    if name == "fashion":
        frame = load_fashion_mnist("train")
        return frame, frame["features"].to_numpy(), frame["y"].to_numpy()
    try:
        import rdata
    except ImportError as e:  # pragma: no cover - a benchmark-only dependency
        raise SystemExit("the letter set needs the PyPI package rdata: pip install rdata") from e
    root = _debian_package("r-cran-mlbench")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Unknown encoding. Assumed ASCII."
        df = rdata.read_rda(root / "usr/lib/R/site-library/mlbench/data/LetterRecognition.rda")[
            "LetterRecognition"
        ]
    x = df.iloc[:, 1:].to_numpy(np.float64)
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    y = df["lettr"].cat.codes.to_numpy().astype(np.int64)
    frame = pl.DataFrame({"y": y, "features": x})
    return frame, x, y


def objective(x: np.ndarray, y: np.ndarray, w: np.ndarray, loss: str, l2: float) -> float:
    scores = x @ w.T
    rows = np.arange(len(y))
    true = scores[rows, y]
    if loss == "multinomial":
        phi = logsumexp(scores, axis=1) - true
    else:
        margins = 1.0 + scores - true[:, None]
        margins[rows, y] = 0.0
        phi = margins.max(axis=1)
    return float(phi.mean() + 0.5 * l2 * np.sum(w * w))


def fit(name: str, frame: pl.DataFrame, loss: str, l2: float, tol: float) -> tuple[np.ndarray, float, Any]:
    """One fit from the frame: its coefficients, process CPU seconds and an info value."""
    c0 = time.process_time()
    if name == "polars-sdca":
        expr = ps.fit("y", "features", loss=loss, l2=l2, tol=tol, fit_intercept=False, max_epochs=100_000)
        m = frame.select(expr).item()
        cpu = time.process_time() - c0
        return np.asarray(m["coef"], dtype=np.float64), cpu, {"epochs": m["epochs"], "dual": m["dual"]}
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    x, y = frame["features"].to_numpy(), frame["y"].to_numpy()
    c = 1.0 / (l2 * frame.height)
    est: Any
    if name == "liblinear":
        est = LinearSVC(C=c, multi_class="crammer_singer", fit_intercept=False, tol=tol, max_iter=1_000_000)
    else:
        est = LogisticRegression(C=c, solver=name, fit_intercept=False, tol=tol, max_iter=MAX_ITER[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(x, y)
    cpu = time.process_time() - c0
    return np.asarray(est.coef_, dtype=np.float64), cpu, {"n_iter": int(np.max(est.n_iter_))}


def run_row(
    data: tuple[pl.DataFrame, np.ndarray, np.ndarray],
    loss: str,
    l2: float,
    peers: tuple[str, ...],
    target: float,
    budget: float,
) -> dict[str, Any]:
    frame, x, y = data
    w, cpu, info = fit("polars-sdca", frame, loss, l2, target / 10)
    lower, upper = info["dual"], objective(x, y, w, loss, l2)
    print(f"  {loss} l2={l2:g} reference: {lower:.12f} <= P* <= {upper:.12f} ({cpu:.1f} s)", flush=True)
    result: dict[str, Any] = {"loss": loss, "l2": l2, "lower_bound": lower, "reference": upper, "solvers": {}}
    for name in ("polars-sdca", *peers):
        points: list[dict[str, Any]] = []
        for tol in LADDER[name]:
            w, cpu, info = fit(name, frame, loss, l2, tol)
            p = objective(x, y, w, loss, l2)
            points.append(
                {"tol": tol, "cpu": cpu, "objective": p, "subopt": (p - lower) / lower, "info": info}
            )
            print(f"  {loss} l2={l2:g} {name} tol={tol:g}: P={p:.12f} cpu={cpu:.2f}", flush=True)
            if points[-1]["subopt"] <= target or sum(q["cpu"] for q in points) > budget:
                break
        reached = points[-1]["subopt"] <= target
        result["solvers"][name] = {**points[-1], "reached": reached, "ladder": points}
    return result


def key(data: str, loss: str, l2: float) -> str:
    """A row's name: ``DATA:LOSS:L2``."""
    return f"{data}:{loss}:{l2:g}"


def stored() -> dict[str, Any]:
    """The last run of every row (an older file without per-row runs counts as none)."""
    if not STORE.exists():
        return {}
    rows = json.loads(STORE.read_text()).get("rows")
    return rows if isinstance(rows, dict) else {}


def table(rows: dict[str, Any], target: float) -> str:
    """results_multiclass_goals.md: every row in ``ROWS`` order, each naming its own run."""
    lines = [
        "# Issue 17 goal rows (`benchmarks/multiclass_goals.py`)",
        "",
        "Process CPU seconds of the first fit of each solver's tolerance ladder with "
        f"`(P - D) / D <= {target:g}`, `D <= P*` the dual value of our fit at `tol = {target / 10:g}` "
        "(so the last column bounds the true suboptimality); one thread, BLAS one thread; a ladder "
        "stops, missed, once its fits have used the run's CPU budget (`--budget`; the CPU seconds of "
        "the whole ladder are then given). Each row names the commit it ran at; the runs are listed "
        "below the table.",
        "",
        "| data | loss | l2 | solver | tol | CPU s | ratio (ours / best peer) | (P - D) / D | commit |",
        "|---|---|---:|---|---:|---:|---:|---:|---|",
    ]
    runs: dict[str, dict[str, Any]] = {}
    for data, loss, l2, _ in ROWS:
        row = rows.get(key(data, loss, l2))
        if row is None:
            lines.append(f"| {data} | {loss} | {l2:g} | not run | | | | | |")
            continue
        machine = row["machine"]
        commit = machine.get("git_commit", "unknown")
        runs[f"{commit} {machine['date']}"] = machine
        ours = row["solvers"]["polars-sdca"]["cpu"]
        best = min(s["cpu"] for n, s in row["solvers"].items() if n != "polars-sdca")
        for name, s in row["solvers"].items():
            ratio = f"**{ours / best:.2f}**" if name == "polars-sdca" else ""
            spent = sum(q["cpu"] for q in s["ladder"])
            missed = "" if s["reached"] else f" (missed; ladder {spent:.0f} CPU s)"
            lines.append(
                f"| {data} | {loss} | {l2:g} | {name} | {s['tol']:g} | {s['cpu']:.2f}{missed} | {ratio} "
                f"| {max(s['subopt'], 0.0):.1e} | {commit} |"
            )
    lines += ["", "Runs:", ""]
    for name, m in sorted(runs.items()):
        start, end = m["load_average"], m.get("load_average_end", ["?"] * 3)
        lines.append(
            f"- {name}: {m['cpu']}, {m['usable_cpus']} usable cores; plugin built {m['plugin_built']}; "
            f"polars {m['polars']}, "
            f"scikit-learn {m['scikit-learn']}, numpy {m['numpy']}; load average (1, 5, 15 min) at start "
            f"{', '.join(f'{v:.2f}' for v in start)}, at end {', '.join(str(round(v, 2)) for v in end)}."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [key(d, loss, l2) for d, loss, l2, _ in ROWS]
    parser.add_argument("--rows", default="letter,fashion", help=f"names or prefixes of: {', '.join(names)}")
    parser.add_argument("--target", type=float, default=1e-6, help="required (P - P*) / P*")
    parser.add_argument("--budget", type=float, default=900.0, help="CPU seconds of one ladder's fits")
    parser.add_argument("--dry-run", action="store_true", help="print only (allowed on a dirty tree)")
    parser.add_argument("--report-only", action="store_true", help="rewrite the results from the stored runs")
    args = parser.parse_args()
    if args.report_only:
        RESULTS.write_text(table(stored(), args.target))
        return
    if dirty() and not args.dry_run:
        raise SystemExit("the working tree has uncommitted changes: commit first, or pass --dry-run")
    wanted = args.rows.split(",")
    chosen = [row for row in ROWS if any(key(*row[:3]).startswith(w) for w in wanted)]
    if not chosen:
        raise SystemExit(f"--rows {args.rows!r} names none of: {', '.join(names)}")
    machine = machine_info(0)
    rows = stored()
    loaded: dict[str, tuple[pl.DataFrame, np.ndarray, np.ndarray]] = {}
    with threadpool_limits(1):
        for data_name, loss, l2, peers in chosen:
            if data_name not in loaded:
                loaded[data_name] = load(data_name)
            run = run_row(loaded[data_name], loss, l2, peers, args.target, args.budget)
            rows[key(data_name, loss, l2)] = {"data": data_name, **run, "machine": machine}
    machine["load_average_end"] = os.getloadavg()
    text = table(rows, args.target)
    print(text)
    if args.dry_run:
        return
    STORE.write_text(json.dumps({"rows": rows}, indent=1, default=str))
    RESULTS.write_text(text)


if __name__ == "__main__":
    main()
