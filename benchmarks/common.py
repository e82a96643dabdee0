"""Shared pieces of the benchmark harness: timing, objectives, memory, machine description.

Everything numerical that decides a reported number lives here, so that polars-sdca and
its peers are judged by the same code:

* :func:`time_call` times a zero-argument callable (one warm-up, then the median of
  ``repeat`` wall-clock timings, with the process CPU time alongside);
* :func:`primal_objective` is the single, independent numpy/scipy implementation of the
  DESIGN.md section 3 objective used to score *every* solver's coefficients (never the
  value a solver reports about itself);
* :func:`dual_objective` recomputes the SDCA dual from per-row dual variables, so the
  reference optimum P* carries a certificate that does not rely on the plugin's own sums;
* :func:`calibrate` walks a solver's tolerance from loose to tight until its coefficients
  reach ``P - P* <= target * P*``;
* :func:`measure_peak_rss` reads the Linux peak-RSS high-water mark around one call.
"""

from __future__ import annotations

import datetime as dt
import gc
import importlib.metadata
import os
import platform
import re
import statistics
import subprocess
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import scipy.sparse
from scipy.special import expit, xlogy

Loss = Literal["logistic", "hinge", "squared", "smooth_hinge"]
FloatArray = npt.NDArray[np.float64]

CLASSIFICATION_LOSSES = ("logistic", "hinge", "smooth_hinge")
REPO = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------


@dataclass
class Timing:
    """Wall-clock and CPU seconds of repeated calls, plus the last call's result."""

    wall: list[float]
    cpu: list[float]
    result: Any = field(repr=False, default=None)

    @property
    def median(self) -> float:
        """Median wall-clock seconds (the number the tables report)."""
        return statistics.median(self.wall)

    @property
    def cpu_median(self) -> float:
        """Median process CPU seconds (all threads), to expose multi-threading."""
        return statistics.median(self.cpu)


def time_once(fn: Callable[[], Any]) -> Timing:
    """Time one call of ``fn`` (wall and process CPU), after a garbage collection."""
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    result = fn()
    t1, c1 = time.perf_counter(), time.process_time()
    return Timing(wall=[t1 - t0], cpu=[c1 - c0], result=result)


def time_call(fn: Callable[[], Any], repeat: int, warmup: int = 1) -> Timing:
    """Time ``fn``: ``warmup`` untimed calls, then ``repeat`` timed calls.

    Each timed call is preceded by ``gc.collect()`` so that a collection triggered by the
    previous call's garbage is not billed to the next one. The median is reported because
    a 2-core machine shared with other processes produces one-sided outliers.
    """
    for _ in range(warmup):
        fn()
    walls: list[float] = []
    cpus: list[float] = []
    result: Any = None
    for _ in range(repeat):
        one = time_once(fn)
        walls += one.wall
        cpus += one.cpu
        result = one.result
    return Timing(wall=walls, cpu=cpus, result=result)


# --------------------------------------------------------------------------------------
# Objectives (DESIGN.md section 3), computed independently of every solver
# --------------------------------------------------------------------------------------


def _signed(y: npt.ArrayLike, loss: Loss) -> FloatArray:
    arr = np.asarray(y, dtype=np.float64)
    if loss in CLASSIFICATION_LOSSES:
        # Binary labels may be {-1, +1} or {0, 1}: the positive class is y > 0.
        return np.where(arr > 0, 1.0, -1.0)
    return arr


def _phi(margin: FloatArray, y: FloatArray, loss: Loss, smoothing: float = 1.0) -> FloatArray:
    if loss == "logistic":
        return np.logaddexp(0.0, -y * margin)
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - y * margin)
    if loss == "squared":
        return 0.5 * (margin - y) ** 2
    if loss == "smooth_hinge":
        # Shalev-Shwartz & Zhang 2013 eq. 6, gamma = smoothing: 0 above 1, linear below 1 - gamma,
        # quadratic between.
        u = 1.0 - y * margin
        g = smoothing
        return np.where(u <= 0.0, 0.0, np.where(u >= g, u - 0.5 * g, 0.5 * u * u / g))
    msg = f"unknown loss {loss!r}"
    raise ValueError(msg)


def _neg_phi_prime(margin: FloatArray, y: FloatArray, loss: Loss, smoothing: float = 1.0) -> FloatArray:
    """Return ``-phi'(margin)``: the optimal dual variable of each row for a smooth loss."""
    if loss == "logistic":
        return y * expit(-y * margin)
    if loss == "squared":
        return y - margin
    if loss == "smooth_hinge":
        return y * np.clip((1.0 - y * margin) / smoothing, 0.0, 1.0)
    msg = f"loss {loss!r} is not differentiable"
    raise ValueError(msg)


def primal_objective(
    x: scipy.sparse.csr_matrix | FloatArray,
    y: npt.ArrayLike,
    w: FloatArray,
    *,
    loss: Loss,
    l2: float,
    l1: float = 0.0,
    smoothing: float = 1.0,
) -> float | FloatArray:
    """Return ``P(w) = (1/n) sum_i phi(x_i . w, y_i) + (l2/2) ||w||^2 + l1 ||w||_1`` (no intercept).

    ``x`` is either a CSR matrix ``(n, d)`` with ``w`` of shape ``(d,)`` (one problem,
    a float is returned), or a dense array ``(..., n, d)`` with ``y`` ``(..., n)`` and
    ``w`` ``(..., d)`` (a batch of independent problems, e.g. one per group; an array of
    objectives of shape ``(...)`` is returned). Intercepts are handled by the callers as
    an explicit constant feature, so this one function scores every case. ``squared`` is
    ``(a - y)^2 / 2`` as in DESIGN.md; ``smooth_hinge`` is Shalev-Shwartz & Zhang 2013 eq. 6 with
    ``gamma = smoothing``.
    """
    w = np.asarray(w, dtype=np.float64)
    if scipy.sparse.issparse(x):
        margin = np.asarray(x @ w, dtype=np.float64)
    else:
        margin = np.einsum("...nd,...d->...n", np.asarray(x, dtype=np.float64), w)
    ys = _signed(y, loss)
    value = _phi(margin, ys, loss, smoothing).mean(axis=-1) + 0.5 * l2 * np.sum(w * w, axis=-1)
    if l1:
        value = value + l1 * np.sum(np.abs(w), axis=-1)
    if np.ndim(value) == 0:
        return float(value)
    return np.asarray(value, dtype=np.float64)


def dual_objective(
    x: scipy.sparse.csr_matrix,
    y: npt.ArrayLike,
    alpha: FloatArray,
    *,
    loss: Loss,
    l2: float,
    l1: float = 0.0,
    smoothing: float = 1.0,
) -> tuple[float, FloatArray]:
    """Return ``(D(alpha), w(alpha))`` for the (Prox-)SDCA dual of DESIGN.md section 3.

    ``D(alpha) = (1/n) sum_i -phi_i*(-alpha_i) - l2 g*(v)`` with ``v = X^T alpha / (l2 n)``,
    ``g(w) = ||w||^2 / 2 + (l1 / l2) ||w||_1``, so ``g*(v) = ||w(alpha)||^2 / 2`` with
    ``w(alpha) = soft_threshold(v, l1 / l2)`` (Shalev-Shwartz & Zhang 2012; ``w = v`` when ``l1 = 0``).
    With ``beta_i = y_i alpha_i``: logistic ``-phi*(-alpha) = H(beta)`` (binary entropy),
    hinge ``beta``, smooth hinge ``beta - smoothing beta^2 / 2`` (``beta`` in [0, 1]);
    squared ``alpha y - alpha^2 / 2``. Any ``beta`` outside its box by more than 1e-9 makes
    the dual ``-inf`` (no certificate). Weak duality gives ``D(alpha) <= P* <= P(w)`` for
    every ``alpha`` and ``w``, so this certifies P*.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    ys = _signed(y, loss)
    n = alpha.shape[0]
    v = np.asarray(x.T @ alpha, dtype=np.float64) / (l2 * n)
    kappa = l1 / l2
    w = np.sign(v) * np.maximum(np.abs(v) - kappa, 0.0) if kappa else v
    if loss in CLASSIFICATION_LOSSES:
        beta = ys * alpha
        if beta.min() < -1e-9 or beta.max() > 1 + 1e-9:
            return float("-inf"), w
        beta = np.clip(beta, 0.0, 1.0)
        if loss == "logistic":
            conj = -(xlogy(beta, beta) + xlogy(1.0 - beta, 1.0 - beta))
        elif loss == "smooth_hinge":
            conj = beta - 0.5 * smoothing * beta * beta
        else:
            conj = beta
    elif loss == "squared":
        conj = alpha * ys - 0.5 * alpha * alpha
    else:
        msg = f"unknown loss {loss!r}"
        raise ValueError(msg)
    return float(conj.mean() - 0.5 * l2 * float(w @ w)), w


def dual_at_primal(
    x: scipy.sparse.csr_matrix,
    y: npt.ArrayLike,
    w: FloatArray,
    *,
    loss: Loss,
    l2: float,
    l1: float = 0.0,
    smoothing: float = 1.0,
) -> float:
    """Return ``D(alpha)`` at ``alpha_i = -phi'(x_i . w)``, a certificate from any primal point.

    At the optimum these are the optimal duals, so a ``w`` close to optimal gives a dual value
    close to P*: a lower bound on P* that needs only a solver's coefficients (smooth losses).
    """
    margin = np.asarray(x @ np.asarray(w, dtype=np.float64), dtype=np.float64)
    alpha = _neg_phi_prime(margin, _signed(y, loss), loss, smoothing)
    return dual_objective(x, y, alpha, loss=loss, l2=l2, l1=l1, smoothing=smoothing)[0]


def relative_suboptimality(p: float | FloatArray, p_star: float | FloatArray) -> float | FloatArray:
    """Return ``(P - P*) / P*``, clipped at 0 (rounding can put P a hair below P*)."""
    value = np.maximum((np.asarray(p) - np.asarray(p_star)) / np.abs(np.asarray(p_star)), 0.0)
    return float(value) if np.ndim(value) == 0 else value


def worst(subopt: float | FloatArray) -> float:
    """Return the largest suboptimality (a NaN, from a failed group, counts as infinite)."""
    arr = np.asarray(subopt, dtype=np.float64)
    if np.isnan(arr).any():
        return float("inf")
    return float(arr.max())


# --------------------------------------------------------------------------------------
# Tolerance calibration
# --------------------------------------------------------------------------------------


def tol_ladder(loosest: float = 1e-1, tightest: float = 1e-12, per_decade: int = 2) -> list[float]:
    """Return tolerances from ``loosest`` to ``tightest``, ``per_decade`` per decade."""
    lo, hi = np.log10(loosest), np.log10(tightest)
    steps = round((lo - hi) * per_decade)
    return [float(f"{10 ** (lo - k / per_decade):.3g}") for k in range(steps + 1)]


@dataclass
class CalibrationPoint:
    """One fit of the ladder: its tolerance, wall time, objective and suboptimality."""

    tol: float | None
    seconds: float
    objective: float
    subopt: float
    info: dict[str, Any]


@dataclass
class Calibration:
    """The ladder walked for one solver and the setting it settled on."""

    points: list[CalibrationPoint]
    reached: bool

    @property
    def chosen(self) -> CalibrationPoint:
        """The first (loosest) point reaching the target, else the last one tried."""
        for point in self.points:
            if point.info.get("reached"):
                return point
        return self.points[-1]


def calibrate(
    build: Callable[[float | None], Callable[[], Any]],
    score: Callable[[Any], tuple[float, float, dict[str, Any]]],
    ladder: Sequence[float | None],
    target: float,
    max_point_seconds: float = 120.0,
) -> Calibration:
    """Find the loosest tolerance with which a solver reaches ``subopt <= target``.

    ``build(tol)`` returns the timed callable (Polars columns to a model); ``score(result)``
    returns ``(objective, suboptimality, info)`` computed by :func:`primal_objective`
    against P*. The ladder is walked from loose to tight and stops at the first point that
    reaches the target. Each point is timed once (after one warm-up of the first point), so
    the points double as a suboptimality-versus-time curve. A solver with no tolerance
    (a direct solver) is given ``ladder=[None]``. The walk also stops when one point takes
    more than ``max_point_seconds`` without reaching the target (tighter ones would be
    slower still); the calibration then reports the target as missed.
    """
    points: list[CalibrationPoint] = []
    build(ladder[0])()  # warm-up: imports, plugin loading, first-touch of the data
    for tol in ladder:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            timing = time_once(build(tol))
        objective, subopt, info = score(timing.result)
        info = dict(info)
        messages = sorted({type(w.message).__name__ for w in caught})
        if messages:
            info["warnings"] = messages
        info["reached"] = bool(subopt <= target)
        points.append(CalibrationPoint(tol, timing.median, objective, subopt, info))
        if info["reached"]:
            return Calibration(points, reached=True)
        if timing.median > max_point_seconds:
            break
    return Calibration(points, reached=False)


# --------------------------------------------------------------------------------------
# Peak memory
# --------------------------------------------------------------------------------------


def _status_kib(field_name: str) -> int | None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    match = re.search(rf"^{field_name}:\s+(\d+)\s+kB", text, re.MULTILINE)
    return int(match.group(1)) if match else None


def _trim_heap() -> None:
    """Hand freed glibc heap back to the kernel, so that it is not silently reused."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) of this process; False if not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def measure_peak_rss(fn: Callable[[], Any]) -> dict[str, Any]:
    """Run ``fn`` once and return its peak resident memory, in MiB.

    Method: RSS before the call (``VmRSS``), reset of the kernel high-water mark by writing
    ``5`` to ``/proc/self/clear_refs``, the call, then ``VmHWM`` (the exact kernel peak of
    the call). Where the reset is refused, a psutil thread samples RSS every millisecond
    instead (an under-estimate for short spikes). ``delta_mib`` = peak - before is the
    memory the call itself needed on top of the data already loaded; freed glibc heap is
    trimmed first, but memory an allocator (jemalloc in Polars) keeps cached can be reused
    without showing, so ``delta_mib`` is a lower bound and ``peak_mib`` an upper bound.
    """
    gc.collect()
    _trim_heap()
    before = _status_kib("VmRSS")
    if before is not None and _reset_peak():
        fn()
        peak = _status_kib("VmHWM")
        method = "VmHWM after clear_refs"
    else:
        import psutil

        proc = psutil.Process()
        before = proc.memory_info().rss // 1024
        peak_box = [before]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak_box[0] = max(peak_box[0], proc.memory_info().rss // 1024)
                time.sleep(0.001)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            fn()
        finally:
            done.set()
            sampler.join()
        peak = max(peak_box[0], proc.memory_info().rss // 1024)
        method = "psutil RSS sampled every 1 ms"
    assert before is not None
    assert peak is not None
    return {
        "before_mib": before / 1024,
        "peak_mib": peak / 1024,
        "delta_mib": max(peak - before, 0) / 1024,
        "method": method,
    }


# --------------------------------------------------------------------------------------
# Machine and versions
# --------------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gib() -> float | None:
    try:
        match = re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())
    except OSError:
        return None
    return int(match.group(1)) / 1024**2 if match else None


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str:
    """Run a read-only git query in the repository; '' when git is unavailable."""
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def dirty_tree() -> bool:
    """Whether tracked files differ from the commit (results must name a clean commit)."""
    return bool(_git("status", "--porcelain", "--untracked-files=no"))


def machine_info(seed: int) -> dict[str, Any]:
    """Describe the machine, the versions and the thread settings of this run."""
    import polars as pl

    import polars_sdca

    commit = _git("rev-parse", "--short", "HEAD")
    dirty = dirty_tree()
    lib = sorted(Path(polars_sdca.__file__).parent.glob("_internal*.so"))
    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "mem_gib": _mem_total_gib(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "polars": pl.__version__,
        "polars_threads": pl.thread_pool_size(),
        "polars_sdca": polars_sdca.__version__,
        "plugin_built": (
            dt.datetime.fromtimestamp(lib[0].stat().st_mtime, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
            if lib
            else "unknown"
        ),
        "git_commit": (commit + ("+dirty" if dirty else "")) if commit else "unknown",
        "scikit-learn": _version("scikit-learn"),
        "polars-ds": _version("polars-ds"),
        "sklearn-contrib-lightning": _version("sklearn-contrib-lightning"),
        "numpy": _version("numpy"),
        "scipy": _version("scipy"),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "seed": seed,
    }
