"""Shared pieces of the Prox-SDCA benchmarks (``accelerated_pattern.py``, ``warm_path.py``).

* :func:`objective` scores coefficients with the elastic-net objective of DESIGN.md section 3
  in numpy/scipy, independently of the plugin (``common.primal_objective`` has no ``l1`` and no
  smooth hinge);
* :func:`write_section` rewrites one script's section of ``results_prox.md`` and keeps the
  other's, so each script can be rerun alone;
* :func:`machine_lines` describes the machine of a run (from ``common.machine_info``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import numpy as np
import scipy.sparse
from common import FloatArray

ProxLoss = Literal["smooth_hinge", "logistic", "squared"]
HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results_prox.md"
_TITLE = "# Prox-SDCA benchmarks (L1 + L2)\n"


def objective(
    x: scipy.sparse.csr_matrix,
    y: FloatArray,
    w: FloatArray,
    *,
    loss: ProxLoss,
    l2: float,
    l1: float,
    smoothing: float = 1.0,
) -> float:
    """Return ``P(w) = (1/n) sum_i phi(x_i.w, y_i) + (l2/2)||w||^2 + l1 ||w||_1`` (no intercept).

    ``smooth_hinge`` is Shalev-Shwartz & Zhang 2013 eq. 6 with ``gamma = smoothing``; labels are -1/+1 for the
    classification losses.
    """
    w = np.asarray(w, dtype=np.float64)
    a = np.asarray(x @ w, dtype=np.float64)
    if loss == "squared":
        phi = 0.5 * (a - y) ** 2
    elif loss == "logistic":
        phi = np.logaddexp(0.0, -y * a)
    else:
        m = y * a
        g = smoothing
        phi = np.where(m >= 1.0, 0.0, np.where(m <= 1.0 - g, 1.0 - m - g / 2.0, (1.0 - m) ** 2 / (2.0 * g)))
    return float(phi.mean() + 0.5 * l2 * (w @ w) + l1 * np.abs(w).sum())


def write_section(name: str, body: str) -> Path:
    """Replace (or append) the section ``name`` of ``results_prox.md`` with ``body``."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = RESULTS.read_text() if RESULTS.exists() else _TITLE
    block = f"{start}\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else f"{text.rstrip()}\n\n{block}\n"
    RESULTS.write_text(text if text.endswith("\n") else text + "\n")
    return RESULTS


def machine_lines(m: dict[str, Any]) -> list[str]:
    """A compact machine/version description of one run (``common.machine_info`` output)."""
    load = ", ".join(f"{v:.2f}" for v in m.get("load_average") or [])
    load_end = ", ".join(f"{v:.2f}" for v in m.get("load_average_end") or [])
    return [
        f"Machine: {m['cpu']}, {m['logical_cpus']} logical cores (Polars pool {m['polars_threads']} "
        f"threads), {m['mem_gib']:.1f} GiB; {m['os']}; Python {m['python']}, polars {m['polars']}, "
        f"polars-sdca {m['polars_sdca']} (plugin built {m['plugin_built']}, commit {m['git_commit']}), "
        f"numpy {m['numpy']}, scipy {m['scipy']}. Load average (1, 5, 15 min) at start {load}, "
        f"at end {load_end}; seed {m['seed']}; run {m['date']}.",
    ]
