"""Benchmark polars-sdca against its peers, in one process run; write results.md and plots.

Usage (from the repository root, with the plugin built by ``make build``)::

    python benchmarks/run.py            # full run
    python benchmarks/run.py --quick    # subsampled, 3 repeats
    python benchmarks/run.py --repeat 7 --cases conll-logistic,twt-logistic,twt-streaming

What is measured (see benchmarks/README.md for the methodology), on each sparse data set
of ``cases.SPARSE_DATA`` (``conll``: CoNLL-2003 tokens; ``twt``: Turkish Web Treebank tokens):

1. ``{data}-logistic``: logistic, no intercept; polars-sdca vs liblinear
   (``LogisticRegression(solver="liblinear")``) and sklearn lbfgs at C = 1/(l2 n), each at
   the loosest tolerance reaching ``P - P* <= target * P*``; ``{data}-hinge``,
   ``{data}-squared``, ``{data}-smooth-hinge``, ``{data}-elasticnet``: the other objectives
   of issue 16's goals, against their peers the same way.
2. ``{data}-streaming``: one pass over the CSR arrays (a lower bound for an epoch) and
   polars-sdca's nanoseconds per non-zero per epoch.
3. ``groups-logistic`` / ``groups-squared``: synthetic per-group dense problems in
   ``group_by("g").agg``; vs polars-ds ``logistic_reg`` / ``lin_reg`` at the same objective.

Raw results go to ``benchmarks/out/results-{quick,full}.json``; ``benchmarks/results.md``
and the PNG plots are rewritten on every run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from cases import (
    SPARSE_CASES,
    SPARSE_DATA,
    GroupProblem,
    SparseCase,
    SparseData,
    SparseProblem,
    group_solvers,
    lightning_unavailable,
    load_sparse,
    make_groups,
    read_sparse_cache,
    ridge_closed_form,
    sparse_solvers,
    write_sparse_cache,
)
from common import (
    Calibration,
    Loss,
    Timing,
    calibrate,
    dirty_tree,
    machine_info,
    measure_peak_rss,
    primal_objective,
    relative_suboptimality,
    time_call,
    time_once,
    tol_ladder,
    worst,
)
from optima import group_reference, logistic_newton, sparse_reference
from report import update_readme, write_plots, write_results_md

import polars_sdca as ps

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
ALL_CASES = (*SPARSE_CASES, *(f"{key}-streaming" for key in SPARSE_DATA), "groups-logistic", "groups-squared")
GROUP_TARGET = 1e-6  # the bar gives no accuracy for the group rows: the harness's 1e-6


def sparse_cache(data: str) -> Path:
    """The Parquet copy of a sparse data set's frame in this run, for the RSS workers."""
    return OUT / f"{data}.parquet"


def log(msg: str) -> None:
    """Print a progress line with the elapsed time."""
    print(f"[{time.perf_counter() - START:7.1f}s] {msg}", flush=True)


START = time.perf_counter()


# --------------------------------------------------------------------------------------
# Peak RSS in a fresh process
# --------------------------------------------------------------------------------------


def rss_in_subprocess(spec: dict[str, Any]) -> dict[str, Any]:
    """Measure one solver's peak RSS in a fresh interpreter (see :func:`rss_worker`)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--rss-worker", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def rss_worker(spec: dict[str, Any]) -> int:
    """Child process: load the problem, warm the solver up on a tiny slice, measure one fit.

    The warm-up loads the plugin / imports the solver's code on a few rows, so the
    measured peak is the fit's own memory (conversion from Polars included) on top of the
    loaded data, not library loading.
    """
    loss: Loss = spec["loss"]
    if spec["kind"] == "sparse":
        sp = read_sparse_cache(Path(spec["path"]))
        kw = {"l1": spec["l1"], "smoothing": spec["smoothing"]}
        tiny = sparse_solvers(sp.head(256), loss, spec["l2"], **kw)[spec["solver"]]
        solver = sparse_solvers(sp, loss, spec["l2"], **kw)[spec["solver"]]
    else:
        gp = make_groups(spec["groups"], spec["rows"], spec["dense"], spec["seed"])
        tiny = group_solvers(gp.head(20), loss, spec["l2"])[spec["solver"]]
        solver = group_solvers(gp, loss, spec["l2"])[spec["solver"]]
    tiny.build(spec["tol"])()
    fn = solver.build(spec["tol"])
    print(json.dumps(measure_peak_rss(fn)))
    return 0


# --------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------


#: A solver whose calibrated fit took longer than this many seconds is timed once more, without
#: a warm-up (its calibration fit was one): scikit-learn's ElasticNet on twt-elasticnet takes about
#: 100 s a fit, and five repeats of it were most of a full run. Ratios against it are far from 1,
#: so one timed run does not change a conclusion; the results give every timed run.
SLOW_SECONDS = 20.0


def time_chosen(key: str, build: Any, cal: Calibration, repeat: int) -> Timing:
    """Time a solver at its calibrated tolerance: ``repeat`` runs after a warm-up, or one run
    without a warm-up when its calibration fit took more than ``SLOW_SECONDS``."""
    chosen = cal.chosen
    slow = chosen.seconds > SLOW_SECONDS
    runs = 1 if slow else repeat
    note = f" (its calibration fit took {chosen.seconds:.0f} s)" if slow else ""
    log(f"  {key}: tol={chosen.tol} reached={cal.reached}; timing {runs}x{note}")
    return time_call(build(chosen.tol), runs, warmup=0 if slow else 1)


def _points(cal: Calibration) -> list[dict[str, Any]]:
    return [
        {"tol": p.tol, "seconds": p.seconds, "objective": p.objective, "subopt": p.subopt, "info": p.info}
        for p in cal.points
    ]


def run_sparse_case(p: SparseProblem, case: SparseCase, args: argparse.Namespace) -> dict[str, Any]:
    """One large sparse fit, polars-sdca vs its peers at the same objective."""
    loss, l2, l1, smoothing = case.loss, case.l2, case.l1(p), case.smoothing
    target = args.target if args.target is not None else case.target
    kw: dict[str, Any] = {"loss": loss, "l2": l2, "l1": l1, "smoothing": smoothing}
    log(f"{case.id}: reference P* (polars-sdca tol=1e-12 and the most accurate peer)")
    ref = sparse_reference(p, loss, l2, l1=l1, smoothing=smoothing)
    p_star = ref["p_star"]
    log(f"  P* = {p_star:.12g}, certified relative gap {ref['certified_relative_gap']:.2e}")

    solvers = sparse_solvers(p, loss, l2, l1=l1, smoothing=smoothing)
    unavailable: dict[str, str] = {}
    if loss == "smooth_hinge" or l1:
        reason = lightning_unavailable()
        if reason is not None:
            unavailable["lightning"] = reason
    if loss == "smooth_hinge":
        unavailable["scikit-learn"] = (
            "no peer: scikit-learn has no smooth-hinge loss outside SGD (not a solver to a tolerance)"
        )
    out: dict[str, Any] = {}
    for key, solver in solvers.items():

        def score(result: Any, solver: Any = solver) -> tuple[float, float, dict[str, Any]]:
            obj = float(primal_objective(p.x, p.y, solver.coef(result), **kw))
            return obj, float(relative_suboptimality(obj, p_star)), solver.info(result)

        log(f"  {key}: calibrating tol")
        # Quick runs walk one tolerance per decade (half the fits), full runs two.
        ladder = tol_ladder(1e-1, 1e-12, per_decade=1 if args.quick else 2)
        cal = calibrate(solver.build, score, ladder, target)
        chosen = cal.chosen
        timing = time_chosen(key, solver.build, cal, args.repeat)
        obj, sub, info = score(timing.result)
        rss = {}
        if not args.no_rss:
            spec = {
                "kind": "sparse",
                "path": str(sparse_cache(case.data)),
                "solver": key,
                "tol": chosen.tol,
                **kw,
            }
            rss = rss_in_subprocess(spec)
        out[key] = {
            "label": solver.name,
            "tol": chosen.tol,
            "tol_meaning": solver.tol_meaning,
            "reached": cal.reached,
            "median_s": timing.median,
            "wall_s": timing.wall,
            "cpu_median_s": timing.cpu_median,
            "objective": obj,
            "subopt": sub,
            "info": info,
            "calibration": _points(cal),
            "rss": rss,
        }
        log(f"  {key}: {timing.median:.3f} s, P = {obj:.12g}, subopt {sub:.2e}, rss {rss}")
    conv = time_call(lambda: _to_scipy(p), args.repeat)
    return {
        "id": case.id,
        "title": f"{SPARSE_DATA[case.data].title}, sparse {loss}" + (f", l1 = {l1:.3g}" if l1 else ""),
        "kind": "sparse",
        "data": case.data,
        "loss": loss,
        "l2": l2,
        "l1": l1,
        "smoothing": smoothing,
        "n": p.n,
        "nnz": p.nnz,
        "n_features": p.n_features,
        "target": target,
        "reference": ref,
        "solvers": out,
        "unavailable": unavailable,
        "conversion_to_scipy_s": conv.median,
    }


def _to_scipy(p: SparseProblem) -> Any:
    from polars_sdca import datasets

    return datasets.sparse_to_scipy(p.df, "features", n_features=p.n_features)


def run_group_case(p: GroupProblem, loss: Loss, l2: float, args: argparse.Namespace) -> dict[str, Any]:
    """Case 3: many small dense groups in one group_by, polars-sdca vs polars-ds."""
    log(f"groups {loss}: reference P* per group")
    ref = group_reference(p, loss, l2)
    p_star = ref.pop("p_star")
    log(f"  certified relative gap (worst group) {ref['certified_relative_gap']:.2e}")
    y = p.y01 if loss == "logistic" else p.yr
    target = args.target if args.target is not None else GROUP_TARGET

    solvers = group_solvers(p, loss, l2)
    out: dict[str, Any] = {}
    objectives: dict[str, np.ndarray] = {}
    for key, solver in solvers.items():

        def score(result: Any, solver: Any = solver) -> tuple[float, float, dict[str, Any]]:
            obj = np.asarray(primal_objective(p.x, y, solver.coef(result), loss=loss, l2=l2))
            sub = np.asarray(relative_suboptimality(obj, p_star))
            info = solver.info(result) | {
                "median_subopt": float(np.nanmedian(sub)),
                "failed_groups": int(np.isnan(obj).sum()),
            }
            return float(np.nansum(obj)), worst(sub), info

        if key.startswith("polars-sdca"):
            ladder: list[float | None] = list(tol_ladder(1e-2, 1e-10, per_decade=1))
        elif loss == "logistic":
            ladder = list(tol_ladder(1e-2, 1e-8, per_decade=1))
        else:
            ladder = [None]
        log(f"  {key}: calibrating tol")
        cal = calibrate(solver.build, score, ladder, target)
        chosen = cal.chosen
        timing = time_chosen(key, solver.build, cal, args.repeat)
        total, sub, info = score(timing.result)
        objectives[key] = np.asarray(primal_objective(p.x, y, solver.coef(timing.result), loss=loss, l2=l2))
        rss = {}
        if not args.no_rss:
            spec = {
                "kind": "groups",
                "groups": p.groups,
                "rows": p.rows,
                "dense": p.d - 1,
                "seed": args.seed,
                "loss": loss,
                "l2": l2,
                "solver": key,
                "tol": chosen.tol,
            }
            rss = rss_in_subprocess(spec)
        out[key] = {
            "label": solver.name,
            "tol": chosen.tol,
            "tol_meaning": solver.tol_meaning,
            "reached": cal.reached,
            "median_s": timing.median,
            "wall_s": timing.wall,
            "cpu_median_s": timing.cpu_median,
            "objective": total,
            "subopt": sub,
            "info": info,
            "calibration": _points(cal),
            "rss": rss,
        }
        log(f"  {key}: {timing.median:.3f} s, sum P = {total:.12g}, worst subopt {sub:.2e}, rss {rss}")
    ours, peer = objectives["polars-sdca"], objectives["polars-ds"]
    rel = np.abs(ours - peer) / p_star
    return {
        "id": f"groups-{loss}",
        "title": f"{p.groups:,} groups x {p.rows} rows x {p.d - 1} dense + constant, {loss}",
        "kind": "groups",
        "loss": loss,
        "l2": l2,
        "groups": p.groups,
        "rows": p.rows,
        "d": p.d,
        "target": target,
        "reference": ref,
        "solvers": out,
        "max_relative_objective_difference": float(np.nanmax(rel)),
        "median_relative_objective_difference": float(np.nanmedian(rel)),
    }


def run_group_sweep(p: GroupProblem, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Sensitivity of the group case to l2, both libraries at their *default* settings.

    One timing each (after the main case warmed everything up); polars-sdca with
    ``tol=1e-6, max_epochs=500`` (its defaults), polars-ds ``logistic_reg`` with its
    defaults (``tol=1e-5, max_iter=200``); P* from the exact numpy solutions.
    """
    import polars as pl
    import polars_ds as pds

    rows: list[dict[str, Any]] = []
    for loss in ("logistic", "squared"):
        label = "y01" if loss == "logistic" else "yr"
        y = p.y01 if loss == "logistic" else p.yr
        for l2 in (1e-2, 1e-3, 1e-4):
            w_ref = logistic_newton(p.x, p.y01, l2) if loss == "logistic" else ridge_closed_form(p, l2)
            p_star = np.asarray(primal_objective(p.x, y, w_ref, loss=loss, l2=l2))
            ours_expr = pl.col(label).sdca.fit(p.features, loss=loss, l2=l2, fit_intercept=False).alias("m")
            if loss == "logistic":
                peer_expr = pds.logistic_reg(*p.features, target=label, add_bias=False, l2_reg=l2).alias("c")
            else:
                peer_expr = pds.lin_reg(*p.features, target=label, add_bias=False, l2_reg=l2 * p.rows).alias(
                    "c"
                )
            t_ours = time_once(lambda e=ours_expr: p.df.group_by("g").agg(e))
            t_peer = time_once(lambda e=peer_expr: p.df.group_by("g").agg(e))
            mo = t_ours.result.sort("g").get_column("m")
            w_ours = mo.struct.field("coef").list.to_array(p.d).to_numpy()
            coef = t_peer.result.sort("g").get_column("c")
            if loss == "logistic":
                coef = coef.list.first()
            w_peer = coef.list.to_array(p.d).to_numpy()
            sub_ours = relative_suboptimality(primal_objective(p.x, y, w_ours, loss=loss, l2=l2), p_star)
            sub_peer = relative_suboptimality(primal_objective(p.x, y, w_peer, loss=loss, l2=l2), p_star)
            rows.append(
                {
                    "loss": loss,
                    "l2": l2,
                    "groups": p.groups,
                    "ours_s": t_ours.median,
                    "peer_s": t_peer.median,
                    "ours_worst_subopt": worst(sub_ours),
                    "peer_worst_subopt": worst(sub_peer),
                    "ours_converged_fraction": float(mo.struct.field("converged").mean()),  # type: ignore[arg-type]
                    "ours_epochs_mean": float(mo.struct.field("epochs").mean()),  # type: ignore[arg-type]
                }
            )
            log(f"  sweep {loss} l2={l2:g}: {rows[-1]}")
    return rows


def run_streaming(p: SparseProblem, data: SparseData, args: argparse.Namespace) -> dict[str, Any]:
    """A streaming lower bound for one epoch, and our cost per non-zero per epoch (at ``data.l2``).

    Lower bound: one pass over the CSR arrays of the same data (SciPy ``X @ v`` reads the
    values and the indices and gathers ``v``: 12 bytes per non-zero plus the gather;
    ``data.sum()`` only streams the 8-byte values). An SDCA epoch must at least read every
    row once and gather / scatter the weights it touches (in fact twice: dot and update).

    polars-sdca per epoch: fits with ``max_epochs`` = 1 and 1 + K (``tol`` tiny so every
    epoch runs), the slope ``(t(1 + K) - t(1)) / K`` removes conversion and setup;
    measured with the gap checked every epoch (``check_every=1``, the default) and only
    at the end (``check_every=1 + K``).
    """
    rng = np.random.default_rng(args.seed)
    v = rng.standard_normal(p.n_features)
    values = p.x.data
    nnz = p.nnz
    passes = {
        "scipy X @ v": time_call(lambda: p.x @ v, args.repeat),
        "numpy data.sum() (values only)": time_call(lambda: values.sum(), args.repeat),
    }
    bound = {name: {"s": t.median, "ns_per_nnz": t.median / nnz * 1e9} for name, t in passes.items()}
    log(f"streaming bound: {bound}")

    per_epoch: list[dict[str, Any]] = []
    k = 10 if args.quick else 20
    for loss in ("hinge", "logistic"):
        for check in ("every epoch", "at the end"):
            times: dict[int, float] = {}
            epochs: dict[int, int] = {}
            for e in (1, 1 + k):
                expr = ps.fit(
                    "y",
                    "features",
                    loss=loss,
                    l2=data.l2,
                    tol=1e-15,
                    fit_intercept=False,
                    n_features=p.n_features,
                    max_epochs=e,
                    check_every=1 if check == "every epoch" else 1 + k,
                ).alias("m")
                t = time_call(lambda expr=expr: p.df.select(expr), max(3, min(args.repeat, 5)))
                times[e] = t.median
                epochs[e] = int(t.result.get_column("m")[0]["epochs"])
            slope = (times[1 + k] - times[1]) / (epochs[1 + k] - epochs[1])
            per_epoch.append(
                {
                    "loss": loss,
                    "gap_check": check,
                    "epochs": epochs,
                    "seconds": times,
                    "s_per_epoch": slope,
                    "ns_per_nnz_epoch": slope / nnz * 1e9,
                    "whole_fit_ns_per_nnz_epoch": times[1 + k] / (epochs[1 + k] * nnz) * 1e9,
                }
            )
            log(f"  {loss} ({check}): {slope * 1e3:.1f} ms/epoch, {slope / nnz * 1e9:.1f} ns/nnz/epoch")
    return {
        "id": f"{data.key}-streaming",
        "data": data.key,
        "n": p.n,
        "nnz": nnz,
        "l2": data.l2,
        "bound": bound,
        "per_epoch": per_epoch,
        "k": k,
    }


# --------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line; ``--quick`` picks the small sizes unless given explicitly."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="50k rows, 2,000 groups, 3 repeats")
    ap.add_argument("--repeat", type=int, default=None, help="timed repeats per solver (default 5, quick 3)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the subsample and synthetic data")
    ap.add_argument(
        "--target",
        type=float,
        default=None,
        help="required relative suboptimality for every case (default: the issue-7 bar's per case, "
        f"groups {GROUP_TARGET:g})",
    )
    ap.add_argument(
        "--n-rows", type=int, default=None, help="rows of each sparse data set (default all, quick 50,000)"
    )
    ap.add_argument("--groups", type=int, default=None, help="number of groups (default 20,000, quick 2,000)")
    ap.add_argument("--group-rows", type=int, default=50)
    ap.add_argument("--group-features", type=int, default=5, help="dense features (plus a constant column)")
    ap.add_argument("--group-l2", type=float, default=1e-2)
    ap.add_argument("--cases", default=",".join(ALL_CASES), help=f"comma-separated subset of {ALL_CASES}")
    ap.add_argument("--no-rss", action="store_true", help="skip the peak-RSS subprocesses")
    ap.add_argument("--no-sweep", action="store_true", help="skip the l2 sweep of the group case")
    ap.add_argument(
        "--dry-run",
        action="store_true",
        help="write only benchmarks/out/ (allowed on a dirty tree); results.md and the README "
        "need a clean commit",
    )
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="rewrite results.md, the plots and the README table from the last full run's raw JSON "
        "(after a change to the report or to a stored long-run file); measures nothing",
    )
    ap.add_argument("--rss-worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.repeat is None:
        args.repeat = 3 if args.quick else 5
    if args.n_rows is None and args.quick:
        args.n_rows = 50_000
    if args.groups is None:
        args.groups = 2_000 if args.quick else 20_000
    args.cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = set(args.cases) - set(ALL_CASES)
    if unknown:
        ap.error(f"unknown case(s) {sorted(unknown)}; choose from {ALL_CASES}")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the selected cases and write the raw JSON, results.md and the plots."""
    args = parse_args(argv)
    if args.rss_worker is not None:
        return rss_worker(json.loads(args.rss_worker))
    if not args.dry_run and dirty_tree():
        log("the tree has uncommitted changes: commit first (results name their commit), or pass --dry-run")
        return 2
    OUT.mkdir(exist_ok=True)
    if args.report_only:
        results = json.loads((OUT / "results-full.json").read_text())
        write_results_md(results, HERE / "results.md", write_plots(results, HERE))
        update_readme(results, HERE, HERE.parent / "README.md")
        log(f"rewrote results.md and the README's table from the run at {results['machine']['git_commit']}")
        return 0
    mode = "quick" if args.quick else "full"
    results: dict[str, Any] = {
        "mode": mode,
        "machine": machine_info(args.seed),
        "config": {k: v for k, v in vars(args).items() if k != "rss_worker"},
        "cases": [],
    }
    log(f"{mode} run: {results['config']}")
    results["sparse_data"] = []
    results["streaming"] = []
    for data in SPARSE_DATA.values():
        described = {"key": data.key, "title": data.title, "label": data.label, "l2": data.l2}
        results["sparse_data"].append(described)
        if not any(c.startswith(f"{data.key}-") for c in args.cases):
            continue
        log(f"loading {data.title} and sparse attributes")
        sp = load_sparse(args.n_rows, args.seed, data.key)
        positive = float(np.mean(sp.y > 0))
        described |= {"n": sp.n, "n_features": sp.n_features, "nnz": sp.nnz, "positive_fraction": positive}
        log(f"  {sp.n:,} rows, {sp.n_features:,} features, {sp.nnz:,} non-zeros, {positive:.1%} positive")
        write_sparse_cache(sp, sparse_cache(data.key))
        for case_id, case in SPARSE_CASES.items():
            if case_id in args.cases and case.data == data.key:
                results["cases"].append(run_sparse_case(sp, case, args))
        if f"{data.key}-streaming" in args.cases:
            results["streaming"].append(run_streaming(sp, data, args))
        del sp
    if any(c.startswith("groups") for c in args.cases):
        gp = make_groups(args.groups, args.group_rows, args.group_features, args.seed)
        log(f"groups: {gp.groups:,} x {gp.rows} rows x {gp.d} columns (l2 = {args.group_l2:g})")
        for loss in ("logistic", "squared"):
            if f"groups-{loss}" in args.cases:
                results["cases"].append(run_group_case(gp, loss, args.group_l2, args))
        if not args.quick and not args.no_sweep:
            log("l2 sweep on 2,000 groups (defaults of both libraries)")
            results["group_sweep"] = run_group_sweep(gp.head(2_000), args)
    results["machine"]["load_average_end"] = machine_info(args.seed)["load_average"]
    results["elapsed_s"] = time.perf_counter() - START
    raw = OUT / f"results-{mode}.json"
    raw.write_text(json.dumps(results, indent=1, default=float))
    if args.dry_run:
        log(f"wrote {raw} (dry run: results.md and the README unchanged)")
        return 0
    plots = write_plots(results, HERE)
    write_results_md(results, HERE / "results.md", plots)
    log(f"wrote {raw}, {HERE / 'results.md'} and {', '.join(p.name for p in plots)}")
    if mode == "full":
        update_readme(results, HERE, HERE.parent / "README.md")
        log("rewrote the README's benchmark table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
