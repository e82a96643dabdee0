"""Turn the raw results of ``run.py`` into ``results.md`` and PNG plots.

Only formatting lives here: every number comes from the raw results dictionary (also
written to ``benchmarks/out/results-{mode}.json``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FLOOR = 1e-16  # suboptimality shown on log axes when P reached P* to rounding


def _s(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _e(x: float) -> str:
    return "inf" if x == float("inf") else f"{x:.1e}"


def _tol(x: float | None) -> str:
    return "direct" if x is None else f"{x:.3g}"


def _rss(solver: dict[str, Any]) -> str:
    rss = solver.get("rss") or {}
    if "delta_mib" in rss:
        return f"{rss['delta_mib']:.0f}"
    return "n/a" if not rss else "error"


def _peer_rows(results: dict[str, Any]) -> list[tuple[dict[str, Any], str, dict[str, Any], dict[str, Any]]]:
    rows = []
    for case in results["cases"]:
        ours = case["solvers"]["polars-sdca"]
        for key, peer in case["solvers"].items():
            if not key.startswith("polars-sdca"):
                rows.append((case, key, ours, peer))
    return rows


def _penalty(case: dict[str, Any]) -> str:
    text = f"l2={case['l2']:g}"
    if case.get("l1"):
        text += f", l1={case['l1']:.3g}"
    return text


def _case_label(case: dict[str, Any], peer: dict[str, Any]) -> str:
    if case["kind"] == "sparse":
        size = f"{case['n']:,} x {case['n_features']:,}, {case['nnz']:,} nnz"
    else:
        size = f"{case['groups']:,} groups x {case['rows']} x {case['d']}"
    return f"{case['id']}: {case['loss']} ({size}, {_penalty(case)}) vs {peer['label']}"


# --------------------------------------------------------------------------------------
# The speed goals
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BarRow:
    """One row of the speed goals: which case, which of our variants, which peers (or stored file)."""

    label: str
    # a case id of this run (in LINEAR_BAR: its suffix after the data set's key), or
    # "multiclass:DATA:LOSS:L2" / "crf:PROBLEM[:all]" (stored runs)
    case: str
    peers: tuple[str, ...]  # the peers' keys in the case: the fastest one that ran is the bar
    max_ratio: float  # our time / the best peer's time must be at most this
    ours: str = "polars-sdca"  # our solver's key in the case


# The linear goals of issue 16 (one thread; the all-core rows are in results_threads.md), each on
# every sparse data set of the run ("{data}-{case}"), ...
LINEAR_BAR = (
    BarRow("hinge to (P - P*)/P* <= 1e-7", "hinge", ("liblinear",), 0.5),
    BarRow("logistic to 1e-7", "logistic", ("liblinear", "lbfgs"), 0.5),
    BarRow("squared (ridge) to 1e-7", "squared", ("sparse_cg", "lsqr"), 0.5),
    BarRow("smooth_hinge to 1e-8", "smooth-hinge", ("lightning",), 0.5),
    BarRow("elastic net (y as target, l1 = 1e-3 l1_max) to 1e-8", "elasticnet", ("lightning", "cd"), 0.5),
)
# ... and the group rows of issue 16, the multiclass ones of issue 17 and the CRF ones of
# issue 18 (both long runs, read from their files).
BAR = (
    BarRow("20,000 groups x 50 x 6, logistic, group_by().agg", "groups-logistic", ("polars-ds",), 1.0),
    BarRow("same, fit_groups", "groups-logistic", ("polars-ds",), 0.2, ours="polars-sdca-fit-groups"),
    BarRow("20,000 groups, squared loss, group_by().agg", "groups-squared", ("polars-ds",), 1.0),
    BarRow("same, fit_groups", "groups-squared", ("polars-ds",), 0.5, ours="polars-sdca-fit-groups"),
    BarRow(
        "letter recognition (20,000 x 16, 26 classes), Crammer-Singer, l2 = 1e-3",
        "multiclass:letter:multiclass_hinge:0.001",
        (),
        1.0,
    ),
    BarRow("same, multinomial, l2 = 1e-4", "multiclass:letter:multinomial:0.0001", (), 1.0),
    BarRow(
        "Fashion-MNIST (60,000 x 784, 10 classes), Crammer-Singer, l2 = 1e-2",
        "multiclass:fashion:multiclass_hinge:0.01",
        (),
        1.0,
    ),
    BarRow("same, l2 = 1e-3", "multiclass:fashion:multiclass_hinge:0.001", (), 1.0),
    BarRow("Fashion-MNIST, multinomial, l2 = 1e-4", "multiclass:fashion:multinomial:0.0001", (), 0.3),
    BarRow("same, l2 = 1e-6", "multiclass:fashion:multinomial:1e-06", (), 0.3),
    BarRow("CoNLL-2003 NER CRF (l2 = 1/n) to 1e-5 relative", "crf:NER", ("L-BFGS",), 0.15),
    BarRow("same, all cores", "crf:NER:all", ("L-BFGS",), 0.1),
    BarRow("OCR letters CRF to 1e-5", "crf:OCR", ("L-BFGS",), 1.0),
)


# The cost of an epoch per non-zero against one streaming pass (issue 16).
EPOCH_GOAL = {"hinge": "<= 3x", "logistic": "<= 6x"}


def _verdict(ratio: float, limit: float, reached: bool) -> str:
    if not reached:
        return "missed (target accuracy not reached)"
    return "**met**" if ratio <= limit else "missed"


def _stored_multiclass(folder: Path, data: str, loss: str, l2: str) -> dict[str, Any] | None:
    """Ours and the best peer of one row of results_multiclass_goals.md (a run of
    ``multiclass_goals.py``, not repeated here; CPU seconds only)."""
    path = folder / "results_multiclass_goals.md"
    if not path.exists():
        return None
    text = path.read_text()
    rows = {}
    for m in re.finditer(
        rf"^\| {data} \| {loss} \| {re.escape(l2)} \| (\S+) \| [^|]+ \| ([\d.]+)( \(missed[^)]*\))? \|"
        r"[^|]*\|[^|]*\| (\S+) \|$",
        text,
        re.MULTILINE,
    ):
        rows[m.group(1)] = {"cpu": float(m.group(2)), "reached": not m.group(3), "commit": m.group(4)}
    ours = rows.pop("polars-sdca", None)
    if ours is None or not rows:
        return None
    name, peer = min(rows.items(), key=lambda kv: kv[1]["cpu"])
    return {"ours": ours, "peer": peer, "peer_name": name, "commit": ours["commit"]}


def _stored_crf(folder: Path, problem: str, all_cores: bool) -> dict[str, Any] | None:
    """One problem's row of issue 18's goals in results_crf.md (``crf_goals.py``): SDCA on one
    thread (CPU s) or on all cores (wall s) against CRFsuite L-BFGS's CPU s (one thread)."""
    path = folder / "results_crf.md"
    if not path.exists():
        return None
    text = path.read_text().partition("<!-- goals:start -->")[2]
    m = re.search(
        rf"^\| {problem} \| \d+ \| [^|]+ \| (\S+) \| ([\d.]+) \(\d+\) \| ([\d.]+) \(\d+\) \| [\d.]+ "
        rf"\| ([\d.]+) \(\d+, (\d+) threads?\)",
        text,
        re.MULTILINE,
    )
    commit = re.search(rf"^- {problem}: .*?commit (\w+)\)", text, re.MULTILINE)
    if not m:
        return None
    ours = float(m.group(4) if all_cores else m.group(2))
    return {
        "eps": m.group(1),
        "ours": ours,
        "peer": float(m.group(3)),
        "threads": int(m.group(5)) if all_cores else 1,
        "commit": commit.group(1) if commit else "?",
    }


def _missing(row: BarRow, why: str) -> str:
    return f"| {row.label} | | | | | | <= {row.max_ratio:g}x | {why} |"


def _data_name(data: dict[str, Any]) -> str:
    """A sparse data set's title with its size and ``l2``, as the goal rows name it."""
    l2 = f"l2 = {data['l2']:.0e}".replace("e-0", "e-")
    if "n" not in data:
        return f"{data['title']} ({l2})"
    return f"{data['title']} ({data['n']:,} x {data['n_features']:,}, {l2})"


def _bar_line(row: BarRow, cases: dict[str, dict[str, Any]], folder: Path) -> str:
    """One row of the speed goals' table."""
    if row.case.startswith("multiclass:"):
        _, data, loss, l2 = row.case.split(":")
        st = _stored_multiclass(folder, data, loss, l2)
        if st is None:
            return _missing(row, "stored result not found")
        ours = {"cpu": st["ours"]["cpu"], "wall": st["ours"]["cpu"]}
        peer = {"cpu": st["peer"]["cpu"], "wall": st["peer"]["cpu"]}
        acc = "1e-6 (stored run)"
        link = "[results_multiclass_goals.md](results_multiclass_goals.md)"
        peer_name = f"{st['peer_name']} ({link}, commit {st['commit']})"
        reached = st["ours"]["reached"]
        caveat = " (CPU seconds only)" if st["peer"]["reached"] else " (the peer missed the accuracy)"
    elif row.case.startswith("crf:"):
        problem, *rest = row.case.split(":")[1:]
        st = _stored_crf(folder, problem, bool(rest))
        if st is None:
            return _missing(row, "stored result not found")
        clock = "wall" if rest else "CPU"
        ours = {"cpu": st["ours"], "wall": st["ours"]}
        peer = {"cpu": st["peer"], "wall": st["peer"]}
        acc = f"{float(st['eps']):g} (certified by our gap)"
        link = "[results_crf.md](results_crf.md)"
        peer_name = f"CRFsuite L-BFGS, CPU s ({link}, commit {st['commit']})"
        reached = True
        caveat = f" (ours: {clock} s, {st['threads']} thread{'s' if st['threads'] > 1 else ''})"
    else:
        case = cases.get(row.case)
        if case is None or row.ours not in case["solvers"]:
            return _missing(row, "case not run")
        acc = f"{case['target']:g}"
        mine = case["solvers"][row.ours]
        ours = {"cpu": mine["cpu_median_s"], "wall": mine["median_s"]}
        ran = [case["solvers"][k] for k in row.peers if k in case["solvers"]]
        if not ran:
            missing = case.get("unavailable", {})
            reasons = "; ".join(f"{k}: {missing.get(k, 'not run')}" for k in row.peers)
            return (
                f"| {row.label} | {acc} | {ours['cpu']:.3f} / {ours['wall']:.3f} | {reasons} "
                f"| | | <= {row.max_ratio:g}x | no peer |"
            )
        p = min(ran, key=lambda q: max(q["cpu_median_s"], q["median_s"]))
        peer = {"cpu": p["cpu_median_s"], "wall": p["median_s"]}
        peer_name = p["label"]
        reached = mine["reached"]
        caveat = "" if p["reached"] else " (the peer missed the accuracy: ratio is a bound)"
    r_cpu, r_wall = ours["cpu"] / peer["cpu"], ours["wall"] / peer["wall"]
    return (
        f"| {row.label} | {acc} | {ours['cpu']:.3g} / {ours['wall']:.3g} | {peer_name} "
        f"| {peer['cpu']:.3g} / {peer['wall']:.3g} | {r_cpu:.2f} / {r_wall:.2f} "
        f"| <= {row.max_ratio:g}x | {_verdict(max(r_cpu, r_wall), row.max_ratio, reached)}{caveat} |"
    )


def bar_lines(results: dict[str, Any], folder: Path) -> list[str]:
    """The table of the speed goals (this run's cases plus two stored runs)."""
    cases = {c["id"]: c for c in results["cases"]}
    lines = [
        "## Speed goals",
        "",
        "Our time and the fastest peer's, both measured in this run (or, for the two long runs, read "
        "from their stored results), at the same objective and the same certified accuracy, one "
        "thread for our fits. The ratio is ours / peer for CPU seconds and for wall seconds "
        "(medians); the verdict uses the larger of the two (the conservative one: a multi-threaded "
        "peer's CPU time counts all its threads, a loaded machine inflates wall time).",
        "",
        "| goal | accuracy | ours CPU / wall (s) | peer | peer CPU / wall (s) "
        "| ratio CPU / wall | target | verdict |",
        "|---|---|---:|---|---:|---:|---:|---|",
    ]
    rows = [
        BarRow(f"{row.label}: {_data_name(data)}", f"{data['key']}-{row.case}", row.peers, row.max_ratio)
        for row in LINEAR_BAR
        for data in results.get("sparse_data", [])
    ]
    lines += [_bar_line(row, cases, folder) for row in (*rows, *BAR)]
    titles = {d["key"]: _data_name(d) for d in results.get("sparse_data", [])}
    for loss in EPOCH_GOAL:
        for st in results.get("streaming", []):
            bound = st["bound"]["scipy X @ v"]["ns_per_nnz"]
            for r in st["per_epoch"]:
                if r["loss"] == loss and r["gap_check"] == "every epoch":
                    lines.append(
                        f"| ns per non-zero per epoch, {loss} (gap checked every epoch): "
                        f"{titles.get(st['data'], st['data'])} | | {r['ns_per_nnz_epoch']:.1f} ns | "
                        f"one streaming pass `X @ v` | {bound:.2f} ns | {r['ns_per_nnz_epoch'] / bound:.1f}x "
                        f"| {EPOCH_GOAL[loss]} | |"
                    )
    notes = []
    notes.append(
        "Multiclass: rows of `benchmarks/multiclass_goals.py` (a separate run, process CPU seconds of "
        "the first fit of each tolerance ladder within 1e-6 of a certified lower bound)."
    )
    notes.append(
        "CRF: rows of `benchmarks/crf_goals.py` (a separate run): SDCA's time is until its duality gap "
        "certifies the accuracy (one thread: CPU s; all cores: wall s), L-BFGS's (one thread, CPU s) "
        "its first iterate within it in hindsight; see results_crf.md."
    )
    lines += ["", *[f"- {n}" for n in notes], ""]
    return lines


def data_lines(results: dict[str, Any]) -> list[str]:
    """The sparse data sets of the run: size, label and ``l2`` of the cases ``{key}-*``."""
    lines = ["Sparse data sets (CRFsuite-style binary token attributes, unit-norm rows, no intercept):", ""]
    for d in results.get("sparse_data", []):
        if "n" not in d:
            lines.append(f"- `{d['key']}-*`: {d['title']}, not run")
            continue
        lines.append(
            f"- `{d['key']}-*`: {d['title']}, {d['n']:,} rows x {d['n_features']:,} features, "
            f"{d['nnz']:,} non-zeros ({d['nnz'] / d['n']:.2f} a row); label {d['label']} "
            f"({d['positive_fraction']:.1%} of the rows); l2 = {d['l2']:g}"
        )
    return [*lines, ""]


def _mark(solver: dict[str, Any]) -> str:
    return "" if solver["reached"] else " (target missed)"


def write_results_md(results: dict[str, Any], path: Path, plots: list[Path]) -> None:
    """Write the results table, the machine description and the supporting tables."""
    m = results["machine"]
    cfg = results["config"]
    lines: list[str] = [
        "# Benchmark results",
        "",
        f"Mode: **{results['mode']}** (`benchmarks/run.py{' --quick' if results['mode'] == 'quick' else ''}"
        f" --repeat {cfg['repeat']}`), run {m['date']}, {results.get('elapsed_s', 0) / 60:.1f} min in total. "
        "How the numbers are obtained: [README.md](README.md).",
        "",
        "Every solver reaches `P - P* <= target * P*` (the target of each case is in the table) with its "
        "loosest tolerance that does (per group: the worst group); times are the median of "
        f"{cfg['repeat']} runs after a warm-up, from Polars columns to a model, conversion included. "
        "Objectives are recomputed from each solver's coefficients by one numpy function. Peak RSS is the "
        "memory a fresh process needed for one fit on top of the loaded data (kernel `VmHWM`).",
        "",
        *data_lines(results),
        *bar_lines(results, path.parent),
        "## All cases",
        "",
        "| case | target | ours (s) | peer (s) | ratio ours/peer | our objective / subopt "
        "| peer objective / subopt | peak RSS Δ ours / peer (MiB) |",
        "|---|---:|---:|---:|---:|---|---|---:|",
    ]
    for case, _key, ours, peer in _peer_rows(results):
        ratio = ours["median_s"] / peer["median_s"]
        obj_word = "" if case["kind"] == "sparse" else "Σ "
        lines.append(
            f"| {_case_label(case, peer)} | {case['target']:g} | {_s(ours['median_s'])} | "
            f"{_s(peer['median_s'])} | **{ratio:.2f}** | {obj_word}{ours['objective']:.10g} / "
            f"{_e(ours['subopt'])}{_mark(ours)} | {obj_word}{peer['objective']:.10g} / "
            f"{_e(peer['subopt'])}{_mark(peer)} | {_rss(ours)} / {_rss(peer)} |"
        )
    for case in results["cases"]:
        for name, reason in case.get("unavailable", {}).items():
            lines.append(f"| {case['id']} vs {name} | | | | | | {reason} | |")
    lines += [
        "",
        "Group cases: objective = sum over groups, subopt = worst group's relative suboptimality.",
        "",
        "## Machine",
        "",
        "| item | value |",
        "|---|---|",
        f"| CPU | {m['cpu']} |",
        f"| cores | {m['logical_cpus']} logical, {m['usable_cpus']} usable; "
        f"Polars pool {m['polars_threads']} threads |",
        f"| memory | {m['mem_gib']:.1f} GiB |" if m.get("mem_gib") else "| memory | unknown |",
        f"| OS | {m['os']} |",
        f"| Python | {m['python']} |",
        f"| polars / polars-sdca | {m['polars']} / {m['polars_sdca']} (plugin built {m['plugin_built']}, "
        f"commit {m['git_commit']}) |",
        f"| scikit-learn / polars-ds / lightning | {m['scikit-learn']} / {m['polars-ds']} / "
        f"{m.get('sklearn-contrib-lightning', 'n/a')} |",
        f"| numpy / scipy | {m['numpy']} / {m['scipy']} |",
        f"| load average (1, 5, 15 min) at start / end | {_load(m.get('load_average'))} / "
        f"{_load(m.get('load_average_end'))} |",
        f"| seed | {m['seed']} |",
        "",
        "## Details",
        "",
        "| case | solver | tolerance used (meaning) | fit detail | CPU s (median) | wall s (all runs) |",
        "|---|---|---|---|---:|---|",
    ]
    for case in results["cases"]:
        for solver in case["solvers"].values():
            detail = ", ".join(f"{k}={_fmt(v)}" for k, v in solver["info"].items())
            walls = ", ".join(f"{w:.3f}" for w in solver["wall_s"])
            lines.append(
                f"| {case['id']} | {solver['label']} | {_tol(solver['tol'])} ({solver['tol_meaning']})"
                f"{_mark(solver)} | {detail} | {solver['cpu_median_s']:.3f} | {walls} |"
            )
    lines += [
        "",
        "## Reference optima",
        "",
        "| case | P* | certified relative gap of P* | sources |",
        "|---|---|---:|---|",
    ]
    for case in results["cases"]:
        ref = case["reference"]
        sources = "; ".join(f"{k}: {v:.12g}" for k, v in ref["sources"].items())
        p_star = f"{ref['p_star']:.12g}" if "p_star" in ref else "per group"
        lines.append(f"| {case['id']} | {p_star} | {_e(ref['certified_relative_gap'])} | {sources} |")
    notes = [f"{case['id']}: {n}" for case in results["cases"] for n in case["reference"].get("notes", [])]
    for case in results["cases"]:
        for solver in case["solvers"].values():
            for point in solver["calibration"]:
                if point["info"].get("warnings"):
                    notes.append(
                        f"{case['id']}: {solver['label']} at tol={_tol(point['tol'])} raised "
                        f"{', '.join(point['info']['warnings'])}"
                    )
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    groups = [c for c in results["cases"] if c["kind"] == "groups"]
    if groups:
        lines += [
            "",
            "## Group cases: per-group agreement of the two libraries",
            "",
            "| case | max relative objective difference | median |",
            "|---|---:|---:|",
        ]
        for case in groups:
            lines.append(
                f"| {case['id']} | {_e(case['max_relative_objective_difference'])} | "
                f"{_e(case['median_relative_objective_difference'])} |"
            )
    for st in results.get("streaming", []):
        lines += [
            "",
            f"## Streaming lower bound: {st['data']} ({st['n']:,} rows, {st['nnz']:,} non-zeros)",
            "",
            "| one pass over the CSR arrays | s | ns per non-zero |",
            "|---|---:|---:|",
        ]
        for name, b in st["bound"].items():
            lines.append(f"| {name} | {b['s']:.4f} | {b['ns_per_nnz']:.2f} |")
        lines += [
            "",
            f"polars-sdca at l2 = {st['l2']:g}, per epoch (slope between 1 and {1 + st['k']} epochs; whole "
            f"fit = time of the {1 + st['k']}-epoch fit / (epochs x nnz), setup and conversion included):",
            "",
            "| loss | duality-gap check | s per epoch | ns per nnz per epoch "
            "| whole fit ns per nnz per epoch |",
            "|---|---|---:|---:|---:|",
        ]
        for row in st["per_epoch"]:
            lines.append(
                f"| {row['loss']} | {row['gap_check']} | {row['s_per_epoch']:.4f} | "
                f"{row['ns_per_nnz_epoch']:.1f} | {row['whole_fit_ns_per_nnz_epoch']:.1f} |"
            )
    if results.get("group_sweep"):
        lines += [
            "",
            "## Group case: sensitivity to l2 (2,000 groups, both libraries at their default settings)",
            "",
            "| loss | l2 | ours (s) | polars-ds (s) | ours worst subopt | polars-ds worst subopt "
            "| ours converged | ours mean epochs |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in results["group_sweep"]:
            lines.append(
                f"| {row['loss']} | {row['l2']:g} | {_s(row['ours_s'])} | {_s(row['peer_s'])} | "
                f"{_e(row['ours_worst_subopt'])} | {_e(row['peer_worst_subopt'])} | "
                f"{row['ours_converged_fraction']:.1%} | {row['ours_epochs_mean']:.0f} |"
            )
    if plots:
        lines += ["", "## Plots", ""]
        lines += [f"![{p.stem}]({p.name})" for p in plots]
    lines.append("")
    path.write_text("\n".join(lines))


README_START = "<!-- generated by benchmarks/run.py from benchmarks/results.md: do not edit -->"
README_END = "<!-- end of generated table -->"


def update_readme(results: dict[str, Any], folder: Path, readme: Path) -> None:
    """Replace the README's benchmark block with this run's goals table, so the README quotes
    exactly what ``results.md`` says (and names the same commit and machine)."""
    text = readme.read_text()
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        msg = f"{readme} has no generated benchmark block ({README_START!r} ... {README_END!r})"
        raise SystemExit(msg)
    m = results["machine"]
    table = bar_lines(results, folder)[2:]  # without the section title
    head = (
        f"Full run of {m['date']} on {m['cpu']} ({m['logical_cpus']} logical cores), commit "
        f"`{m['git_commit']}`, polars {m['polars']}; load average at start "
        f"{', '.join(f'{x:.2f}' for x in m['load_average'] or [])}."
    )
    block = "\n".join([README_START, "", head, "", *table, README_END])
    readme.write_text(text[:start] + block + text[end + len(README_END) :])


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, list):
        return "/".join(str(x) for x in v)
    return str(v)


def _load(v: Any) -> str:
    return "n/a" if not v else ", ".join(f"{x:.2f}" for x in v)


def write_plots(results: dict[str, Any], folder: Path) -> list[Path]:
    """Plot suboptimality versus time (calibration ladders) and the time ratios."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    written: list[Path] = []
    cases = results["cases"]
    if cases:
        ncols = min(2, len(cases))
        nrows = (len(cases) + ncols - 1) // ncols
        fig, axes = plt.subplots(nrows, ncols, figsize=(5.6 * ncols, 4.0 * nrows), squeeze=False)
        flat = list(axes.ravel())
        for ax in flat[len(cases) :]:
            ax.set_visible(False)
        for ax, case in zip(flat, cases, strict=False):
            for key, solver in case["solvers"].items():
                pts = solver["calibration"]
                xs = [p["seconds"] for p in pts]
                ys = [max(p["subopt"], FLOOR) for p in pts]
                style = "o-" if key == "polars-sdca" else "s--"
                ax.plot(xs, ys, style, label=solver["label"], markersize=4)
            ax.axhline(case["target"], color="grey", linewidth=0.8, linestyle=":")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel("wall time of one fit (s)")
            ax.set_ylabel("(P - P*) / P*")
            ax.set_title(case["id"], fontsize=10)
            ax.legend(fontsize=7)
        fig.suptitle(
            f"Suboptimality vs time over each solver's tolerance ladder ({results['mode']} run); "
            "dotted: target",
            fontsize=10,
        )
        fig.tight_layout()
        path = folder / "suboptimality_vs_time.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

        rows = _peer_rows(results)
        fig, ax = plt.subplots(figsize=(8, 0.55 * len(rows) + 1.2))
        labels = [f"{case['id']} vs {peer['label']}" for case, _k, _o, peer in rows]
        ratios = [ours["median_s"] / peer["median_s"] for _c, _k, ours, peer in rows]
        colors = ["tab:green" if r <= 1 else "tab:red" for r in ratios]
        ax.barh(range(len(rows)), ratios, color=colors)
        ax.set_yticks(range(len(rows)), labels, fontsize=8)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_xlim(min([*ratios, 1.0]) / 2, max([*ratios, 1.0]) * 3)
        ax.invert_yaxis()
        for i, r in enumerate(ratios):
            ax.text(r, i, f" {r:.2f}", va="center", fontsize=8)
        ax.set_xlabel("time ratio polars-sdca / peer (median; < 1 is faster)")
        ax.set_title(f"Same objective, same target suboptimality ({results['mode']} run)", fontsize=10)
        fig.tight_layout()
        path = folder / "ratios.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
