"""Turn the raw results of ``run.py`` into ``results.md`` and PNG plots.

Only formatting lives here: every number comes from the raw results dictionary (also
written to ``benchmarks/out/results-{mode}.json``).
"""

from __future__ import annotations

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
            if key != "polars-sdca":
                rows.append((case, key, ours, peer))
    return rows


def _case_label(case: dict[str, Any], peer: dict[str, Any]) -> str:
    if case["kind"] == "sparse":
        size = f"{case['n']:,} x {case['n_features']:,}, {case['nnz']:,} nnz"
    else:
        size = f"{case['groups']:,} groups x {case['rows']} x {case['d']}"
    return f"{case['loss']} ({size}, l2={case['l2']:g}) vs {peer['label']}"


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
        f"Every solver reaches `P - P* <= {cfg['target']:g} * P*` with its loosest tolerance that does "
        "(per group: the worst group); times are the median of "
        f"{cfg['repeat']} runs after a warm-up, from Polars columns to a model, conversion included. "
        "Objectives are recomputed from each solver's coefficients by one numpy function. Peak RSS is the "
        "memory a fresh process needed for one fit on top of the loaded data (kernel `VmHWM`).",
        "",
        "| case | ours (s) | peer (s) | ratio ours/peer | our objective / subopt | peer objective / subopt "
        "| peak RSS Δ ours / peer (MiB) |",
        "|---|---:|---:|---:|---|---|---:|",
    ]
    for case, _key, ours, peer in _peer_rows(results):
        ratio = ours["median_s"] / peer["median_s"]
        obj_word = "" if case["kind"] == "sparse" else "Σ "
        lines.append(
            f"| {_case_label(case, peer)} | {_s(ours['median_s'])} | {_s(peer['median_s'])} | "
            f"**{ratio:.2f}** | {obj_word}{ours['objective']:.10g} / {_e(ours['subopt'])}{_mark(ours)} | "
            f"{obj_word}{peer['objective']:.10g} / {_e(peer['subopt'])}{_mark(peer)} | "
            f"{_rss(ours)} / {_rss(peer)} |"
        )
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
        f"| scikit-learn / polars-ds | {m['scikit-learn']} / {m['polars-ds']} |",
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
    if "streaming" in results:
        st = results["streaming"]
        lines += [
            "",
            f"## Streaming lower bound ({st['n']:,} rows, {st['nnz']:,} non-zeros)",
            "",
            "| one pass over the CSR arrays | s | ns per non-zero |",
            "|---|---:|---:|",
        ]
        for name, b in st["bound"].items():
            lines.append(f"| {name} | {b['s']:.4f} | {b['ns_per_nnz']:.2f} |")
        lines += [
            "",
            f"polars-sdca, per epoch (slope between 1 and {1 + st['k']} epochs; whole fit = time of the "
            f"{1 + st['k']}-epoch fit / (epochs x nnz), setup and conversion included):",
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
