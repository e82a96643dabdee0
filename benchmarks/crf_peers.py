"""SDCA against CRFsuite's L-BFGS and L2SGD (python-crfsuite) on CoNLL-2003 NER and OCR.

Usage (from the repository root, plugin built with ``make build``)::

    python benchmarks/crf_peers.py                        # both problems, full (about 1 hour)
    python benchmarks/crf_peers.py --problems ner --subset 2000

Same problem for every solver: the CRF objective with ``l2 = 1/n`` (CRFsuite ``c2 = l2 n / 2``,
full states and transitions, three extra attributes for our bias / start / end weights; see
``crf_common.py``), the same attributes, single-threaded. Every solver's final weights are
scored by the same numpy objective (``crf_common.primal``).

* ``P*``: bracketed by certificates. From below: CRFsuite's L-BFGS optimum minus
  ``||grad P||^2 / (2 l2)`` (``P`` is l2-strongly convex; the gradient in numpy) and every SDCA
  ``primal - gap``; from above: the smallest objective seen. Suboptimality ``(P - P*) / P*``
  uses the lower end (so it is never understated).
* SDCA (``crf_fit``, gap sampling): one run per target ``eps`` in {1e-3, 1e-5} with
  ``tol=eps`` (at most ``--max-epochs`` epochs), i.e. the time until its duality gap
  *certifies* ``P - P* <= eps P``; the table also gives the true suboptimality it had then.
* CRFsuite L-BFGS, run to convergence (``epsilon=1e-10``, ``delta=1e-12``): the time of the
  first iteration whose objective (CRFsuite's logged value, which is ``n P`` exactly; checked
  against the numpy objective at the final weights) is within ``eps`` of ``P*``. L-BFGS cannot
  know that it got there: this is hindsight, which favours it.
* CRFsuite L2SGD: its logged per-epoch loss is a running sum over the epoch, not ``P`` at any
  weights, so it is run again for 1, 2, 4, ... epochs and each final (best) model is scored;
  its time to ``eps`` is that of the first such run within ``eps`` (grid resolution).

Times are wall-clock and process CPU seconds from the start of training (CRFsuite's feature
generation and our Polars-to-core conversion included; building the inputs excluded). On a
shared machine CPU seconds are the comparable number. For NER the test split is tagged by
the SDCA ``tol=1e-5`` model and by CRFsuite's converged L-BFGS model (token accuracy, entity
F1). Writes ``benchmarks/crf_peers.png`` (NER) / ``crf_peers_<problem>.png``, the "peers" section
of ``benchmarks/results_crf.md`` and ``benchmarks/out/crf_peers.json``. A run of some
``--problems`` keeps the stored results of the others (``--problems ""`` only re-renders).
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
from crf_common import (
    HERE,
    OUT,
    Problem,
    certified_lower_bound,
    crfsuite_items,
    load_problem,
    machine_line,
    model_weights,
    primal,
    train_crfsuite,
    write_section,
)

import polars_sdca as ps
from polars_sdca.crf import entity_scores

TARGETS = (1e-3, 1e-5)
L2SGD_EPOCHS = (1, 2, 4, 8, 16, 32, 64)


def sdca(problem: Problem, tol: float, max_epochs: int, seed: int) -> dict[str, Any]:
    fit = ps.crf_fit(
        problem.tag,
        problem.features,
        sequence=problem.sequence,
        tol=tol,
        max_epochs=max_epochs,
        seed=seed,
        n_features=len(problem.attributes) if problem.features != "pixels" else None,
    )
    w0, c0 = time.perf_counter(), time.process_time()
    model = problem.frame.select(fit.alias("model"))
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    m = model.item()
    return {
        "tol": tol,
        "model": model,
        "epochs": m["epochs"],
        "converged": m["converged"],
        "primal": m["primal"],
        "primal_numpy": primal(problem, model_weights(m), m["l2"]),
        "gap": m["gap"],
        "gap_trace": m["gap_trace"],
        "l2": m["l2"],
        "wall": wall,
        "cpu": cpu,
    }


def crfsuite_runs(problem: Problem, l2: float, args: argparse.Namespace) -> dict[str, Any]:
    items = crfsuite_items(problem)
    c2 = l2 * problem.n / 2
    lbfgs = train_crfsuite(
        problem,
        items,
        "lbfgs",
        {
            "c1": 0.0,
            "c2": c2,
            "max_iterations": args.lbfgs_iterations,
            "epsilon": 1e-10,
            "delta": 1e-12,
            "period": 20,
        },
    )
    print(f"  L-BFGS: {len(lbfgs.losses)} iterations, {lbfgs.total_cpu:.0f} s CPU", flush=True)
    final, lower = certified_lower_bound(problem, lbfgs.weights, l2)
    sgd = []
    for epochs in L2SGD_EPOCHS[: args.l2sgd_runs]:
        run = train_crfsuite(problem, items, "l2sgd", {"c2": c2, "max_iterations": epochs, "delta": -1e300})
        sgd.append(
            {
                "epochs": epochs,
                "primal": primal(problem, run.weights, l2),
                "wall": run.total_wall,
                "cpu": run.total_cpu,
            }
        )
        print(f"  L2SGD {epochs} epochs: P {sgd[-1]['primal']:.8f}, {run.total_cpu:.0f} s CPU", flush=True)
    return {
        "c2": c2,
        "n_features": lbfgs.n_features,
        "lbfgs": {
            "primal": [loss / problem.n for loss in lbfgs.losses],
            "primal_numpy_final": final,
            "certified_lower": lower,
            "wall": lbfgs.wall,
            "cpu": lbfgs.cpu,
            "total_wall": lbfgs.total_wall,
            "total_cpu": lbfgs.total_cpu,
        },
        "l2sgd": sgd,
        "tagger": lbfgs.tagger,
    }


def ner_test_scores(problem: Problem, ours: pl.DataFrame, tagger: Any) -> dict[str, dict[str, float]]:
    """Token accuracy and entity F1 on the CoNLL-2003 test split of our model and CRFsuite's."""
    vocab = {attr: i for i, attr in enumerate(problem.attributes)}
    test = load_problem("ner-test", vocabulary=vocab)
    pred = test.frame.select(ps.crf_predict(ours, "features", sequence="sentence")).to_series()
    theirs = [tag for seq in crfsuite_items(test) for tag in tagger.tag(seq)]
    scored = test.frame.with_columns(sdca=pred, crfsuite=pl.Series(theirs))
    out = {}
    for col in ("sdca", "crfsuite"):
        f1 = entity_scores(scored, truth="ner", prediction=col, sequence="sentence").row(-1, named=True)["f1"]
        out[col] = {"accuracy": float((scored[col] == scored["ner"]).mean()), "f1": f1}  # type: ignore[arg-type]
    out["agreement"] = {"tokens": float((scored["sdca"] == scored["crfsuite"]).mean())}  # type: ignore[arg-type]
    return out


def first(values: list[float], bound: float) -> int | None:
    hits = np.flatnonzero(np.asarray(values) <= bound)
    return int(hits[0]) if len(hits) else None


def times_to_targets(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Wall / CPU seconds of each solver to each target (None: not reached)."""
    lower = res["lower"]
    out: dict[str, dict[str, Any]] = {}
    for eps in TARGETS:
        key = f"{eps:g}"
        run = res["sdca"][key]
        lb = res["peers"]["lbfgs"]
        i = first(lb["primal"], lower * (1 + eps))
        j = first([r["primal"] for r in res["peers"]["l2sgd"]], lower * (1 + eps))
        sgd = res["peers"]["l2sgd"][j] if j is not None else None
        out[key] = {
            "sdca": {
                "wall": run["wall"],
                "cpu": run["cpu"],
                "epochs": run["epochs"],
                "subopt": run["primal"] / lower - 1,
                "capped": not run["converged"],
            },
            "lbfgs": None if i is None else {"wall": lb["wall"][i], "cpu": lb["cpu"][i], "iterations": i + 1},
            "l2sgd": None
            if sgd is None
            else {"wall": sgd["wall"], "cpu": sgd["cpu"], "epochs": sgd["epochs"]},
        }
    return out


def plot(results: list[dict[str, Any]], path: os.PathLike[str] | str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5.8 * len(results), 4.4), squeeze=False)
    for ax, res in zip(axes[0], results, strict=True):
        lower = res["lower"]
        lb = res["peers"]["lbfgs"]
        ax.semilogy(
            lb["cpu"],
            np.maximum(np.asarray(lb["primal"]) / lower - 1, 1e-12),
            label="CRFsuite L-BFGS: (P - P*)/P*",
        )
        sgd = res["peers"]["l2sgd"]
        ax.semilogy(
            [r["cpu"] for r in sgd],
            [r["primal"] / lower - 1 for r in sgd],
            "s--",
            label="CRFsuite L2SGD: (P - P*)/P*",
        )
        run = res["sdca"][f"{TARGETS[-1]:g}"]
        trace = np.asarray(run["gap_trace"]) / lower
        ax.semilogy(
            run["cpu"] * np.arange(1, len(trace) + 1) / len(trace),
            trace,
            ".-",
            label="SDCA (gap): certified gap / P*",
        )
        ax.semilogy(
            [res["sdca"][f"{e:g}"]["cpu"] for e in TARGETS],
            [max(res["sdca"][f"{e:g}"]["primal"] / lower - 1, 1e-12) for e in TARGETS],
            "k*",
            markersize=10,
            label="SDCA stopped at tol: (P - P*)/P*",
        )
        for eps in TARGETS:
            ax.axhline(eps, color="grey", linewidth=0.6, linestyle=":")
        ax.set_title(f"{res['problem'].upper()} ({res['describe'].split(',')[0]}), l2 = 1/n")
        ax.set_xlabel("CPU seconds (single thread)")
        ax.set_ylabel("relative suboptimality")
        ax.set_ylim(1e-9, None)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _cell(entry: dict[str, Any] | None, what: str) -> str:
    if entry is None:
        return "not reached"
    if entry.get("capped"):
        return f"not certified in {entry['epochs']} epochs ({entry['cpu']:.1f} / {entry['wall']:.1f})"
    unit = {"sdca": "epochs", "lbfgs": "iterations", "l2sgd": "epochs"}[what]
    return (
        f"{entry['cpu']:.1f} / {entry['wall']:.1f} ({entry[unit]} {unit[:2] if unit == 'epochs' else 'it'})"
    )


def _ratio(ours: dict[str, Any], peer: dict[str, Any] | None) -> str:
    if peer is None:
        return "n/a"
    return f"{'> ' if ours.get('capped') else ''}{ours['cpu'] / peer['cpu']:.2f}"


def plot_path(problem: str) -> os.PathLike[str]:
    """The plot of one problem: ``crf_peers.png`` for NER, ``crf_peers_<problem>.png`` otherwise."""
    return HERE / ("crf_peers.png" if problem == "ner" else f"crf_peers_{problem}.png")


def report(results: list[dict[str, Any]]) -> str:
    """The peers section from raw results (fresh or kept from an earlier run's JSON)."""
    lines = [
        "## SDCA vs CRFsuite L-BFGS and L2SGD (`benchmarks/crf_peers.py`)",
        "",
        "Same objective (`l2 = 1/n`; CRFsuite `c2 = l2 n / 2 = 0.5`, full states and transitions, "
        "bias/start/end as attributes), same attributes, every final model scored by one numpy "
        "objective. Time to a relative suboptimality `(P - P*)/P* <= eps`: SDCA until its duality gap "
        "certifies it (`tol=eps`); L-BFGS at its first iterate within eps (in hindsight: it cannot "
        "tell); L2SGD at the first of its 1, 2, 4, ... epoch runs within eps. Cells: CPU / wall "
        "seconds (count); ratio = SDCA CPU / peer CPU (< 1: SDCA faster). Single-threaded, "
        "shared machine: CPU seconds are the comparable figure. Each problem keeps the results of "
        "its latest run (`--problems ner` leaves OCR's in place); its machine line is below.",
        "",
        "| problem | eps | SDCA (certified) | its true subopt. | L-BFGS | L2SGD "
        "| ratio vs L-BFGS | ratio vs L2SGD |",
        "|---|---:|---|---:|---|---|---:|---:|",
    ]
    for res in results:
        for key, row in res["times"].items():
            cells = [
                res["problem"].upper(),
                key,
                _cell(row["sdca"], "sdca"),
                f"{row['sdca']['subopt']:.1e}",
                _cell(row["lbfgs"], "lbfgs"),
                _cell(row["l2sgd"], "l2sgd"),
                _ratio(row["sdca"], row["lbfgs"]),
                _ratio(row["sdca"], row["l2sgd"]),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Reference optima and agreement:", ""]
    for res in results:
        lb = res["peers"]["lbfgs"]
        sgd = res["peers"]["l2sgd"]
        ref = res["sdca"][f"{TARGETS[-1]:g}"]
        lines.append(
            f"- {res['problem'].upper()}: {res['describe']} (CRFsuite generated "
            f"{res['peers']['n_features']:,} features). P* in [{res['lower']:.10f}, "
            f"{res['upper']:.10f}]. L-BFGS converged after {len(lb['primal'])} iterations "
            f"({lb['total_cpu']:.0f} s CPU) at P = {lb['primal_numpy_final']:.10f} (its log: "
            f"{lb['primal'][-1]:.10f}; gradient certificate P* >= {lb['certified_lower']:.10f}). "
            f"SDCA `tol={TARGETS[-1]:g}`: {ref['epochs']} epochs, P = {ref['primal']:.10f}, certified "
            f"gap {ref['gap']:.1e}; relative difference from L-BFGS "
            f"{abs(lb['primal_numpy_final'] - ref['primal']) / ref['primal']:.1e}. L2SGD after "
            f"{sgd[-1]['epochs']} epochs: (P - P*)/P* = {sgd[-1]['primal'] / res['lower'] - 1:.1e}."
        )
        if "test" in res:
            t = res["test"]
            lines.append(
                f"  Test split (46,435 tokens): token accuracy SDCA {100 * t['sdca']['accuracy']:.2f}% vs "
                f"L-BFGS {100 * t['crfsuite']['accuracy']:.2f}%, entity F1 {100 * t['sdca']['f1']:.2f} vs "
                f"{100 * t['crfsuite']['f1']:.2f}; the taggers agree on "
                f"{100 * t['agreement']['tokens']:.2f}% of the tokens."
            )
    for res in results:
        name = os.path.basename(plot_path(res["problem"]))
        lines += ["", f"![suboptimality against CPU time, {res['problem'].upper()}]({name})"]
    for res in results:
        minutes = f" ({res['minutes']:.0f} min)" if res.get("minutes") is not None else ""
        lines += ["", f"{res['problem'].upper()} run{minutes}: {res['machine']}"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="ner,ocr", help='comma-separated: ner, ocr ("": re-render)')
    parser.add_argument("--subset", type=int, default=None, help="first N training sequences only")
    parser.add_argument("--max-epochs", type=int, default=100, help="SDCA epoch cap per run")
    parser.add_argument("--lbfgs-iterations", type=int, default=3000)
    parser.add_argument(
        "--l2sgd-runs", type=int, default=len(L2SGD_EPOCHS), help="how many of 1, 2, 4, ... epochs"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    raw_path = OUT / ("crf_peers.json" if args.subset is None else f"crf_peers-subset{args.subset}.json")
    # Results of problems not re-run now are kept from the previous run with the same data (the
    # older single-run format has one machine description for the file: it is carried over).
    kept: dict[str, dict[str, Any]] = {}
    if raw_path.exists():
        stored = json.loads(raw_path.read_text())
        for r in stored["results"]:
            r.setdefault("machine", machine_line(stored["machine"], None) if "machine" in stored else "")
            kept[r["problem"]] = r
    for name in filter(None, args.problems.split(",")):  # --problems "" re-renders the report
        started = time.perf_counter()
        info = machine_info(args.seed)
        problem = load_problem(name, args.subset)
        print(f"{name}: {problem.describe()}", flush=True)
        runs = {}
        for eps in TARGETS:
            runs[f"{eps:g}"] = r = sdca(problem, eps, args.max_epochs, args.seed)
            print(
                f"  SDCA tol={eps:g}: {r['epochs']} epochs, gap {r['gap']:.2e}, {r['cpu']:.0f} s CPU",
                flush=True,
            )
        peers = crfsuite_runs(problem, r["l2"], args)
        lower = max(peers["lbfgs"]["certified_lower"], *(r["primal"] - r["gap"] for r in runs.values()))
        every = [*(r["primal"] for r in runs.values()), peers["lbfgs"]["primal_numpy_final"]]
        res: dict[str, Any] = {
            "problem": name,
            "describe": problem.describe(),
            "lower": lower,
            "upper": min(every),
            "sdca": runs,
            "peers": peers,
        }
        res["times"] = times_to_targets(res)
        if name == "ner" and args.subset is None:
            res["test"] = ner_test_scores(problem, runs[f"{TARGETS[-1]:g}"]["model"], peers["tagger"])
        fresh = {
            **{k: v for k, v in res.items() if k not in ("sdca", "peers")},
            "sdca": {k: {f: v for f, v in r.items() if f != "model"} for k, r in runs.items()},
            "peers": {k: v for k, v in peers.items() if k != "tagger"},
            "minutes": (time.perf_counter() - started) / 60,
            "machine": machine_line(info, os.getloadavg()),
        }
        plot([fresh], plot_path(name))
        kept[name] = fresh
    order = {"ner": 0, "ocr": 1}
    results = [kept[k] for k in sorted(kept, key=lambda k: order.get(k, len(order)))]
    OUT.mkdir(exist_ok=True)
    raw_path.write_text(json.dumps({"results": results}, indent=1, default=float))
    body = report(results)
    if args.subset is not None:
        body = body.replace("## SDCA vs", f"## (subset of {args.subset} sequences) SDCA vs", 1)
    print(write_section("peers", body))
    print(body)


if __name__ == "__main__":
    main()
