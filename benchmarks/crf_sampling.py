"""Gap sampling against uniform sampling for SDCA on CRFs (issue 5; the paper's Figures 2 and 4).

Usage (from the repository root, plugin built with ``make build``)::

    python benchmarks/crf_sampling.py                      # CoNLL-2003 NER and OCR, full
    python benchmarks/crf_sampling.py --problems ocr --subset 1000 --max-epochs 20

For each problem (CoNLL-2003 NER train: 14,041 sentences, CRFsuite NER attributes from
``polars_sdca.crf.token_features``; OCR letters, folds 0-8: 6,202 words, 128 pixels) and each
``sampling`` in {"gap" (80% draws proportional to the stored block gaps, the default), "uniform"},
one ``crf_fit`` with ``l2 = 1/n`` (the paper's), the same seed, ``check_every=1`` and a
tolerance too small to stop (so every pass is one full epoch and ends with a certified gap):
its ``gap_trace`` is the duality gap after each epoch, an upper bound on the primal
suboptimality ``P(w_t) - P*`` that needs no reference solution. (The plugin reports the gap
per epoch, not ``P(w_t)``; ``crf_peers.py`` measures true suboptimality against time.)

Reported: epochs to a relative gap ``gap / P* <= 1e-4`` (and 1e-3, 1e-6), the uniform-over-gap
ratio of those epochs, and the wall / CPU seconds of the runs; ``P*`` is bracketed by the best certified
lower bound ``max(primal - gap)`` of the runs and the best primal. Writes
``benchmarks/crf_sampling.png`` (log10 relative gap against epochs), the "sampling" section of
``benchmarks/results_crf.md`` and the raw numbers to ``benchmarks/out/crf_sampling.json``. A run
of some ``--problems`` keeps the stored results of the others (``--problems ""`` only re-renders).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np
import polars as pl
from common import machine_info
from crf_common import HERE, OUT, Problem, load_problem, machine_line, model_weights, primal, write_section

import polars_sdca as ps

SAMPLINGS = ("gap", "uniform")
TARGETS = (1e-3, 1e-4, 1e-6)
NEVER = 1e-15  # a tolerance no run reaches: every check is an end-of-epoch check


def run(problem: Problem, sampling: str, max_epochs: int, seed: int) -> dict[str, Any]:
    """One fit to ``max_epochs`` epochs; its per-epoch gaps, final certificate and times."""
    fit = ps.crf_fit(
        problem.tag,
        problem.features,
        sequence=problem.sequence,
        sampling=sampling,  # type: ignore[arg-type]
        tol=NEVER,
        max_epochs=max_epochs,
        check_every=1,
        seed=seed,
        n_features=len(problem.attributes) if problem.features != "pixels" else None,
    )
    w0, c0 = time.perf_counter(), time.process_time()
    m = problem.frame.select(fit).item()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    if m["emission"] is None or len(m["gap_trace"]) != m["epochs"]:
        msg = f"{problem.name}/{sampling}: unexpected fit {m['status']}, {len(m['gap_trace'])} checks"
        raise RuntimeError(msg)
    return {
        "sampling": sampling,
        "epochs": m["epochs"],
        "gap_trace": m["gap_trace"],
        "primal": m["primal"],
        "primal_numpy": primal(problem, model_weights(m), m["l2"]),
        "dual": m["dual"],
        "gap": m["gap"],
        "l2": m["l2"],
        "wall": wall,
        "cpu": cpu,
    }


def first_epoch(trace: list[float], bound: float) -> int | None:
    """1-based epoch of the first gap ``<= bound``."""
    hits = np.flatnonzero(np.asarray(trace) <= bound)
    return int(hits[0]) + 1 if len(hits) else None


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """Bracket ``P*`` and find the epochs to each target (also for results read back from JSON)."""
    runs = result["runs"]
    lower = max(r["primal"] - r["gap"] for r in runs)
    for r in runs:
        r["reached"] = {f"{t:g}": first_epoch(r["gap_trace"], t * lower) for t in TARGETS}
    return {**result, "lower": lower, "upper": min(r["primal"] for r in runs)}


def plot(results: list[dict[str, Any]], path: os.PathLike[str] | str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 4.2), squeeze=False)
    for ax, res in zip(axes[0], results, strict=True):
        for r in res["runs"]:
            rel = np.asarray(r["gap_trace"]) / res["lower"]
            ax.semilogy(np.arange(1, len(rel) + 1), rel, marker=".", label=f"SDCA, {r['sampling']} sampling")
        for t in TARGETS:
            ax.axhline(t, color="grey", linewidth=0.6, linestyle=":")
        ax.set_title(f"{res['problem'].upper()}: {res['describe'].split(',')[0]}, l2 = 1/n")
        ax.set_xlabel("epochs (passes over the sequences)")
        ax.set_ylabel("certified relative suboptimality: gap / P*")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fmt_epochs(e: int | None, cap: int) -> str:
    return str(e) if e is not None else f"> {cap}"


def ratio(by: dict[str, dict[str, Any]], target: str) -> str:
    """Uniform's epochs over gap sampling's to ``target`` (a bound when uniform did not get there)."""
    g, u = by["gap"]["reached"][target], by["uniform"]["reached"][target]
    if g is None:
        return "n/a"
    return f"{u / g:.1f}" if u is not None else f"> {by['uniform']['epochs'] / g:.1f}"


def report(results: list[dict[str, Any]]) -> str:
    columns = " | ".join(f"epochs to gap {t:g}" for t in TARGETS)
    lines = [
        "## Gap sampling vs uniform sampling (`benchmarks/crf_sampling.py`)",
        "",
        "SDCA with exact line search (`crf_fit`), `l2 = 1/n`, same seed, the certified duality gap "
        "after every epoch (an upper bound on `P(w_t) - P*`). Relative gap = gap / P*, P* bracketed "
        "below. Gap sampling draws 80% of the sequences proportionally to their stored block gaps "
        "(the default).",
        "",
        f"| problem | sampling | {columns} | uniform / gap (1e-3, 1e-4) | final rel. gap | wall s | CPU s "
        "| CPU s / epoch |",
        "|---|---|" + "---:|" * (len(TARGETS) + 5),
    ]
    for res in results:
        by = {r["sampling"]: r for r in res["runs"]}
        for r in res["runs"]:
            cap = r["epochs"]
            reached = " | ".join(fmt_epochs(r["reached"][f"{t:g}"], cap) for t in TARGETS)
            ratios = f"{ratio(by, '0.001')}, {ratio(by, '0.0001')}" if r["sampling"] == "gap" else ""
            lines.append(
                f"| {res['problem'].upper()} | {r['sampling']} | {reached} | {ratios} | "
                f"{r['gap'] / res['lower']:.1e} | {r['wall']:.0f} | {r['cpu']:.0f} | {r['cpu'] / cap:.2f} |"
            )
    lines += ["", "Problems, references and runs:", ""]
    for res in results:
        checks = ", ".join(
            f"{r['sampling']} {abs(r['primal_numpy'] - r['primal']) / r['primal']:.0e}" for r in res["runs"]
        )
        lines.append(
            f"- {res['problem'].upper()}: {res['describe']}; "
            f"{res['lower']:.10f} <= P* <= {res['upper']:.10f}; the plugin's primal matches the "
            f"numpy objective at its weights to {checks} (relative). Run of {res['minutes']:.0f} min: "
            f"{res['machine']}"
        )
    lines += ["", "![gap vs uniform sampling](crf_sampling.png)"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="ner,ocr", help="comma-separated: ner, ocr")
    parser.add_argument("--subset", type=int, default=None, help="first N training sequences only")
    parser.add_argument("--max-epochs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    raw = OUT / ("crf_sampling.json" if args.subset is None else f"crf_sampling-subset{args.subset}.json")
    # Results of problems not re-run now are kept from the previous run with the same data.
    kept = json.loads(raw.read_text())["results"] if raw.exists() else []
    fresh = []
    for name in filter(None, args.problems.split(",")):  # --problems "" re-renders the report
        started = time.perf_counter()
        info = machine_info(args.seed)
        problem = load_problem(name, args.subset)
        print(f"{name}: {problem.describe()}", flush=True)
        runs = []
        for sampling in SAMPLINGS:
            r = run(problem, sampling, args.max_epochs, args.seed)
            print(f"  {sampling}: {r['epochs']} epochs, gap {r['gap']:.2e}, {r['cpu']:.0f} s CPU", flush=True)
            runs.append(r)
        fresh.append(
            {
                "problem": name,
                "describe": problem.describe(),
                "runs": runs,
                "minutes": (time.perf_counter() - started) / 60,
                "machine": machine_line(info, os.getloadavg()),
            }
        )
    order = {"ner": 0, "ocr": 1}
    merged = {r["problem"]: r for r in [*kept, *fresh]}
    results = [summarize(merged[k]) for k in sorted(merged, key=order.__getitem__)]
    OUT.mkdir(exist_ok=True)
    raw.write_text(
        json.dumps({"results": [{k: v for k, v in r.items() if k != "reached"} for r in results]}, indent=1)
    )
    plot(results, HERE / "crf_sampling.png")
    body = report(results)
    if args.subset is not None:
        body = body.replace("## Gap sampling", f"## (subset of {args.subset} sequences) Gap sampling", 1)
    print(write_section("sampling", body))
    print(body)


if __name__ == "__main__":
    pl.Config.set_tbl_rows(20)
    main()
