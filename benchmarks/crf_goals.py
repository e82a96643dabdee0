"""Issue 18's goal rows: SDCA epochs and fits against CRFsuite's L-BFGS, on one thread and all cores.

Usage (from the repository root, plugin built with ``make build``, clean tree)::

    python benchmarks/crf_goals.py                         # ner, ocr, chunk, pos (about 1 hour)
    python benchmarks/crf_goals.py --problems ner          # one problem; others kept from the JSON
    python benchmarks/crf_goals.py --problems ner --dry-run  # a dirty tree: print, write nothing

Problems (``crf_common.load_problem``): CoNLL-2003 NER (9 labels), OCR letters (26 labels, dense
pixels), and the same CoNLL-2003 training file tagged with its chunk tags (``chunk``, about 20
labels) and POS tags (``pos``, 45 labels), to show how the ratio moves with the number of
labels ``K`` (the lattice is ``K^2`` per token). Same objective as ``crf_peers.py`` (``l2 = 1/n``,
CRFsuite ``c2 = l2 n / 2``, full states and transitions).

Rows, per problem:

* **epoch**: CPU seconds of one SDCA epoch on one thread without the certificate passes
  (``(fit of 1 + E epochs - fit of 1 epoch) / E`` with ``check_every=0``, so data conversion and
  the final certificate cancel; the median of three such pairs after a warm-up fit), against the
  median CPU seconds of one CRFsuite L-BFGS iteration (its first 30 iterations).
* **to eps** (1e-5 for NER and OCR, 1e-4 for chunk and POS): ``P*`` is bracketed by an SDCA run
  at a much tighter ``tol`` (``[P - gap, P]``); SDCA runs with ``tol=eps`` (stopping when its
  gap certifies it) on one thread and on all cores (``n_threads`` = Polars' thread count),
  alternating, three times each, medians of wall and CPU seconds; CRFsuite
  L-BFGS is timed to its first iterate within ``eps`` of the lower end (in hindsight, which favours
  it). Ratios are SDCA / CRFsuite CPU seconds for one thread, wall seconds for all cores
  (several threads spend more CPU in total; what they buy is wall time).
* **ceiling**: as many one-thread fits to ``eps`` as there are cores, each in its own process,
  started together after a warm-up (nothing shared): ``cores x wall alone / wall together`` is
  the throughput independent fits reach, about the best speed-up one fit on every core can
  expect on this machine (cores that are SMT siblings or share memory bandwidth slow each other).

Writes the "goals" section of ``benchmarks/results_crf.md`` and its per-problem store
``benchmarks/results_crf_goals.json`` (committed: ``--problems`` reruns some problems and keeps the
others' last runs, and a store under the ignored ``benchmarks/out/`` was lost with a machine; a
``--subset`` run's store stays in ``benchmarks/out/``), naming the commit; refuses a dirty tree
unless ``--dry-run`` (which writes nothing).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import time
from typing import Any

import numpy as np
import polars as pl
from common import machine_info
from crf_common import (
    HERE,
    OUT,
    Problem,
    crfsuite_items,
    load_problem,
    machine_line,
    train_crfsuite,
    write_section,
)

import polars_sdca as ps

TARGET = {"ner": 1e-5, "ocr": 1e-5, "chunk": 1e-4, "pos": 1e-4}
REFERENCE_TOL = {"ner": 1e-9, "ocr": 1e-8, "chunk": 1e-7, "pos": 1e-6}
EPOCHS = 3  # epochs timed after the first one
REPEATS = 3  # pairs of fits whose median difference is the epoch's CPU seconds; fits to eps


def dirty() -> bool:
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=here, capture_output=True, text=True
    )
    return bool(out.stdout.strip()) or out.returncode != 0


def sdca_fit(problem: Problem, **options: Any) -> dict[str, Any]:
    """One ``crf_fit`` with its wall and process CPU seconds (conversion included)."""
    n_features = len(problem.attributes) if problem.features != "pixels" else None
    expr = ps.crf_fit(
        problem.tag, problem.features, sequence=problem.sequence, n_features=n_features, **options
    )
    w0, c0 = time.perf_counter(), time.process_time()
    m = problem.frame.select(expr.alias("model")).item()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return {k: m[k] for k in ("primal", "gap", "epochs", "converged", "n_threads")} | {
        "wall": wall,
        "cpu": cpu,
    }


def epoch_seconds(problem: Problem, seed: int) -> float:
    """The median over ``REPEATS`` pairs, after a warm-up fit: the first fit on a problem pays
    for touching its memory (on POS a 1-epoch fit took 3.4 CPU s cold and 1.6 s warm, as long
    as a 4-epoch fit cold), which made the difference of two single fits meaningless."""
    sdca_fit(problem, max_epochs=1, check_every=0, n_threads=1, seed=seed)
    diffs = []
    for _ in range(REPEATS):
        one = sdca_fit(problem, max_epochs=1, check_every=0, n_threads=1, seed=seed)
        more = sdca_fit(problem, max_epochs=1 + EPOCHS, check_every=0, n_threads=1, seed=seed)
        diffs.append((more["cpu"] - one["cpu"]) / EPOCHS)
    return float(np.median(diffs))


def lbfgs(problem: Problem, l2: float, lower: float, eps: float, max_iterations: int) -> dict[str, Any]:
    """CRFsuite L-BFGS: median iteration CPU time and the time to ``(P - lower) <= eps lower``."""
    run = train_crfsuite(
        problem,
        crfsuite_items(problem),
        "lbfgs",
        {
            "c1": 0.0,
            "c2": l2 * problem.n / 2,
            "max_iterations": max_iterations,
            "epsilon": 1e-10,
            "delta": eps / 100,
            "period": 10,
        },
    )
    primal = np.asarray(run.losses) / problem.n
    steps = np.diff(np.concatenate([[0.0], run.cpu]))
    hits = np.flatnonzero(primal <= lower * (1 + eps))
    i = int(hits[0]) if len(hits) else None
    return {
        "iteration_cpu": float(np.median(steps[: min(30, len(steps))])),
        "iterations": len(primal),
        "to_eps": None if i is None else {"iterations": i + 1, "cpu": run.cpu[i], "wall": run.wall[i]},
    }


def _ceiling_copy(name: str, subset: int | None, options: dict[str, Any], start: Any, walls: Any) -> None:
    """One of the concurrent copies: load, warm up, wait for the others, fit, report the wall."""
    problem = load_problem(name, subset)
    sdca_fit(problem, max_epochs=1, check_every=0, n_threads=1, seed=options["seed"])
    start.wait()
    walls.put(sdca_fit(problem, n_threads=1, **options)["wall"])


def ceiling(name: str, args: argparse.Namespace, copies: int, eps: float) -> list[float]:
    """Wall seconds of ``copies`` one-thread fits to ``eps`` run at once in separate processes."""
    ctx = mp.get_context("spawn")
    start, walls = ctx.Barrier(copies), ctx.Queue()
    options = {"tol": eps, "max_epochs": args.max_epochs, "seed": args.seed}
    copy_args = (name, args.subset, options, start, walls)
    procs = [ctx.Process(target=_ceiling_copy, args=copy_args) for _ in range(copies)]
    for proc in procs:
        proc.start()
    out = [walls.get() for _ in procs]
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            raise SystemExit(f"a concurrent copy of the {name} fit failed (exit code {proc.exitcode})")
    return out


def measure(name: str, args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    info = machine_info(args.seed)
    problem = load_problem(name, args.subset)
    eps = TARGET[name]
    cores = pl.thread_pool_size()
    print(f"{name}: {problem.describe()}", flush=True)
    epoch = epoch_seconds(problem, args.seed)
    print(f"  one epoch: {epoch:.3f} CPU s", flush=True)
    ref = sdca_fit(problem, tol=REFERENCE_TOL[name], max_epochs=args.max_epochs, n_threads=1, seed=args.seed)
    lower, upper = ref["primal"] - ref["gap"], ref["primal"]
    print(f"  reference: P* in [{lower:.10f}, {upper:.10f}] ({ref['epochs']} epochs)", flush=True)
    # The fits alternate between the thread counts, REPEATS times, and each count keeps its
    # median wall and CPU seconds: on a shared machine one run of each can be 30% apart.
    fits: dict[int, list[dict[str, Any]]] = {t: [] for t in sorted({1, cores})}
    for _ in range(REPEATS):
        for threads, done in fits.items():
            r = sdca_fit(problem, tol=eps, max_epochs=args.max_epochs, n_threads=threads, seed=args.seed)
            done.append(r)
            print(
                f"  SDCA {threads} thread(s): {r['epochs']} epochs, {r['cpu']:.1f} CPU s, {r['wall']:.1f} s",
                flush=True,
            )
    runs = {}
    for threads, done in fits.items():
        r = dict(done[0])
        r["wall"] = float(np.median([d["wall"] for d in done]))
        r["cpu"] = float(np.median([d["cpu"] for d in done]))
        r["subopt"] = r["primal"] / lower - 1
        runs[str(threads)] = r
    together = ceiling(name, args, cores, eps) if cores > 1 else []
    limit = cores * runs["1"]["wall"] / float(np.mean(together)) if together else None
    print(f"  {cores} one-thread copies at once: {together} s wall, ceiling {limit}", flush=True)
    peer = lbfgs(problem, 1.0 / problem.n, lower, eps, args.lbfgs_iterations)
    print(f"  L-BFGS: {peer}", flush=True)
    return {
        "problem": name,
        "describe": problem.describe(),
        "labels": len(problem.labels),
        "eps": eps,
        "cores": cores,
        "epoch_cpu": epoch,
        "lower": lower,
        "upper": upper,
        "reference_epochs": ref["epochs"],
        "sdca": runs,
        "ceiling": limit,
        "lbfgs": peer,
        "minutes": (time.perf_counter() - started) / 60,
        "machine": machine_line(info, os.getloadavg()),
    }


def report(results: list[dict[str, Any]]) -> str:
    lines = [
        "## Issue 18's goals: SDCA against CRFsuite L-BFGS (`benchmarks/crf_goals.py`)",
        "",
        "Epoch: CPU seconds of one single-threaded SDCA epoch (certificate passes excluded; median of "
        "three pairs of fits after a warm-up) over "
        "the median CPU seconds of one CRFsuite L-BFGS iteration. To eps: SDCA until its duality gap "
        "certifies `eps` (`tol=eps`); L-BFGS at its first iterate within `eps` of the certified "
        "`P*` (hindsight); SDCA's fits alternate between one thread and all cores, medians of three. "
        "One thread: CPU seconds; all cores: wall seconds (SDCA on "
        "`n_threads` = Polars' thread count, CRFsuite on its one thread). Ratio = SDCA / CRFsuite "
        "(< 1: SDCA faster). Ceiling: as many one-thread fits as cores run at once in separate "
        "processes, `cores x wall alone / wall together`, about the best speed-up every core can "
        "give one fit on this machine.",
        "",
        "| problem | K | epoch / L-BFGS iteration | eps | SDCA 1 thread: CPU s (epochs) "
        "| L-BFGS: CPU s (iterations) | ratio | SDCA all cores: wall s (epochs) | ratio (wall) "
        "| speed-up over 1 thread (wall) | ceiling |",
        "|---|---:|---|---:|---|---|---:|---|---:|---:|---:|",
    ]
    for r in results:
        one = r["sdca"]["1"]
        many = r["sdca"][str(r["cores"])]
        peer = r["lbfgs"]["to_eps"]
        it = r["lbfgs"]["iteration_cpu"]
        epoch = f"{r['epoch_cpu']:.3f} / {it:.3f} = {r['epoch_cpu'] / it:.2f}"
        peer_cell = "not reached" if peer is None else f"{peer['cpu']:.1f} ({peer['iterations']})"
        ratio = "n/a" if peer is None else f"{one['cpu'] / peer['cpu']:.3f}"
        ratio_wall = "n/a" if peer is None else f"{many['wall'] / peer['wall']:.3f}"
        cells = [
            r["problem"].upper(),
            str(r["labels"]),
            epoch,
            f"{r['eps']:g}",
            f"{one['cpu']:.1f} ({one['epochs']})",
            peer_cell,
            ratio,
            f"{many['wall']:.1f} ({many['epochs']}, {r['cores']} threads)",
            ratio_wall,
            f"{one['wall'] / many['wall']:.2f}",
            "not measured" if r.get("ceiling") is None else f"{r['ceiling']:.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    tagged = sorted((r for r in results if r["problem"] != "ocr"), key=lambda r: r["labels"])
    if len(tagged) > 1:
        moves = []
        for r in tagged:
            peer = r["lbfgs"]["to_eps"]
            ratio = "n/a" if peer is None else f"{r['sdca']['1']['cpu'] / peer['cpu']:.3f}"
            epoch = r["epoch_cpu"] / r["lbfgs"]["iteration_cpu"]
            moves.append(
                f"K = {r['labels']} ({r['problem'].upper()}): {ratio} to eps, epoch {epoch:.2f} iterations"
            )
        lines += [
            "",
            "The same CoNLL-2003 tokens with more labels (the lattice is `K^2` per token): "
            + "; ".join(moves)
            + ".",
        ]
    lines += ["", "Problems and references:", ""]
    for r in results:
        lines.append(
            f"- {r['problem'].upper()}: {r['describe']}. P* in [{r['lower']:.10f}, {r['upper']:.10f}] "
            f"(SDCA, {r['reference_epochs']} epochs); SDCA's true relative suboptimality at "
            f"`tol={r['eps']:g}`: {r['sdca']['1']['subopt']:.1e} (1 thread). Run of "
            f"{r['minutes']:.0f} min: {r['machine']}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--problems", default="ner,ocr,chunk,pos", help="comma-separated: ner, ocr, chunk, pos"
    )
    parser.add_argument("--subset", type=int, default=None, help="first N training sequences only")
    parser.add_argument("--max-epochs", type=int, default=300)
    parser.add_argument("--lbfgs-iterations", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true", help="print only (allowed on a dirty tree)")
    args = parser.parse_args()
    if dirty() and not args.dry_run:
        raise SystemExit("the working tree has uncommitted changes: commit first, or pass --dry-run")
    subset = args.subset
    raw = HERE / "results_crf_goals.json" if subset is None else OUT / f"crf_goals-subset{subset}.json"
    kept: dict[str, dict[str, Any]] = {}
    if raw.exists() and not args.dry_run:
        kept = {r["problem"]: r for r in json.loads(raw.read_text())["results"]}
    for name in filter(None, args.problems.split(",")):
        kept[name] = measure(name, args)
    order = list(TARGET)
    results = [kept[k] for k in sorted(kept, key=lambda k: order.index(k) if k in order else len(order))]
    body = report(results)
    if args.subset is not None:
        body = body.replace(
            "## Issue 18's goals", f"## (subset of {args.subset} sequences) Issue 18's goals", 1
        )
    print(body)
    if not args.dry_run:
        OUT.mkdir(exist_ok=True)
        raw.write_text(json.dumps({"results": results}, indent=1, default=float))
        print(write_section("goals", body))


if __name__ == "__main__":
    main()
