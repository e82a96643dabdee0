"""Many small groups: Newton (``solver="auto"``) against SDCA and polars-ds, one run.

The ``groups-logistic`` and ``groups-squared`` cases of ``run.py`` (20,000 groups x 50 rows x
6 features: 5 N(0, 1) and the constant column ``one``, ``fit_intercept=False``, ``l2=1e-2``,
``tol=1e-6``), fitted through ``group_by("g").agg(fit(...))`` and through one ``fit_groups``
call, with ``solver="auto"`` (Newton here) and ``solver="sdca"``, next to polars-ds' calls of
``cases.group_solvers``. Prints the median wall time and process CPU time of three runs each
(the machine's cores are shared, so CPU time is the steadier number) and the largest
coefficient difference to the SDCA fit.

Run: ``python benchmarks/newton_groups.py [groups] [--solvers auto]`` (``--solvers auto`` skips
the slow SDCA runs; the coefficient column then compares with the ``auto`` fit). The header
names the commit (``+dirty`` for a modified tree) and the machine's load.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import polars as pl
import polars_ds as pds
from cases import PDS_MAX_ITER, make_groups
from common import machine_info

import polars_sdca as ps

L2, TOL = 1e-2, 1e-6


def timed(run: Callable[[], pl.DataFrame]) -> tuple[float, float, pl.DataFrame]:
    """Median wall and CPU seconds of three runs, and the last output."""
    walls, cpus = [], []
    for _ in range(3):
        w0, c0 = time.perf_counter(), time.process_time()
        out = run()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), out


def agg(df: pl.DataFrame, expr: pl.Expr) -> pl.DataFrame:
    """One aggregation per group."""
    return df.group_by("g").agg(expr)


def one_call(df: pl.DataFrame, expr: pl.Expr, label: str) -> pl.DataFrame:
    """Every group's model from one ``fit_groups`` call."""
    return df.select(expr).unnest(label)


def main(groups: int, solvers: list[str]) -> None:
    p = make_groups(groups, 50, 5, seed=0)
    d = p.d
    info = machine_info(0)
    threads = pl.thread_pool_size()
    print(f"commit {info['git_commit']}, {info['cpu']}, load {info['load_average']}")
    print(f"{groups} groups x 50 rows x {d} features, l2={L2}, tol={TOL}, polars threads {threads}")
    print(f"| case | call | solver | wall s | CPU s | epochs mean | max |coef - {solvers[0]} coef| |")
    print("|---|---|---|---|---|---|---|")
    for loss, label in [("logistic", "y01"), ("squared", "yr")]:
        opts = {"loss": loss, "l2": L2, "tol": TOL, "fit_intercept": False, "max_epochs": 100_000}
        results: dict[str, tuple[float, float, np.ndarray, float | None]] = {}
        for solver in solvers:
            fit = pl.col(label).sdca.fit(p.features, solver=solver, **opts).alias("model")  # type: ignore[arg-type]
            wall, cpu, out = timed(partial(agg, p.df, fit))
            m = out.sort("g").get_column("model").struct.unnest()
            ran = m["solver"].unique().to_list()
            results[f"group_by agg | {ran}"] = (wall, cpu, np.stack(m["coef"].to_numpy()), m["epochs"].mean())
            expr = ps.fit_groups(label, p.features, by="g", solver=solver, **opts)  # type: ignore[arg-type]
            wall, cpu, out = timed(partial(one_call, p.df, expr, label))
            m = out.sort("g").get_column(label).struct.unnest()
            results[f"fit_groups | {ran}"] = (wall, cpu, np.stack(m["coef"].to_numpy()), m["epochs"].mean())
        if loss == "logistic":
            expr = pds.logistic_reg(
                *p.features, target=label, add_bias=False, l2_reg=L2, tol=1e-5, max_iter=PDS_MAX_ITER
            ).alias("coef")
            wall, cpu, out = timed(partial(agg, p.df, expr))
            pds_coef = out.sort("g").get_column("coef").list.first().list.to_array(d).to_numpy()
        else:
            expr = pds.lin_reg(*p.features, target=label, add_bias=False, l2_reg=L2 * p.rows).alias("coef")
            wall, cpu, out = timed(partial(agg, p.df, expr))
            pds_coef = out.sort("g").get_column("coef").list.to_array(d).to_numpy()
        results["group_by agg | polars-ds"] = (wall, cpu, pds_coef, None)
        # The first solver's group_by fit.
        reference = next(iter(results.values()))[2]
        for key, (wall, cpu, coef, epochs) in results.items():
            call, solver = key.split(" | ")
            diff = float(np.abs(coef - reference).max())
            ep = "" if epochs is None else f"{epochs:.1f}"
            print(f"| groups-{loss} | {call} | {solver} | {wall:.3f} | {cpu:.3f} | {ep} | {diff:.1e} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    chosen = ["sdca", "auto"]
    if "--solvers" in args:
        at = args.index("--solvers")
        chosen = args[at + 1].split(",")
        del args[at : at + 2]
    main(int(args[0]) if args else 20_000, chosen)
