"""Convergence plots: the duality-gap trace of each fit, on a log scale (matplotlib).

Every model struct (linear or CRF) carries ``gap_trace``: the certified duality gap after each
gap check. :func:`convergence` draws one line per model, so a per-group fit shows at a glance
which groups converged fast, which slowly, and which stopped at ``max_epochs``.

matplotlib is an optional dependency (``pip install 'polars-sdca[plot]'``), imported only when a
plot is drawn. The figure is built without ``pyplot``: no GUI backend and no global state, so it
works headless (PNG through Agg) and in notebooks alike.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["convergence", "gap_traces"]

_LEGEND_MAX = 12
"""More lines than this get no legend (it would hide the plot)."""


def _model_column(frame: pl.DataFrame) -> str:
    structs = [
        c
        for c, t in frame.schema.items()
        if isinstance(t, pl.Struct) and any(f.name == "gap_trace" for f in t.fields)
    ]
    if not structs:
        msg = (
            f"no model column in the frame (columns {frame.columns}); expected a Struct column "
            "with a gap_trace field, the output of fit or crf_fit"
        )
        raise ValueError(msg)
    return structs[0]


def gap_traces(models: Any) -> list[tuple[str, list[float]]]:
    """The (label, gap trace) of each fitted model, in order; failed fits are left out.

    Parameters
    ----------
    models
        A model dict, a Struct Series of models, a DataFrame with a model column (its
        non-model columns, for example the group keys, label the lines) or with an unnested
        ``gap_trace`` column, or a fitted :mod:`polars_sdca.sklearn` estimator (its
        ``models_``).

    Returns
    -------
    list of (str, list of float)
        One entry per model that has a trace.

    Raises
    ------
    TypeError
        ``models`` is none of the above.
    ValueError
        A DataFrame without a model column.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_sdca as ps
    >>> from polars_sdca.plot import gap_traces
    >>> df = pl.DataFrame({"g": [1, 1, 2, 2], "x": [-1.0, 1.0, -1.0, 1.0], "y": [0, 1, 0, 1]})
    >>> models = df.group_by("g", maintain_order=True).agg(ps.fit("y", ["x"]).alias("m"))
    >>> [(label, len(trace) > 0) for label, trace in gap_traces(models)]
    [('g=1', True), ('g=2', True)]
    """
    if hasattr(models, "models_"):
        models = models.models_
    if isinstance(models, dict):
        models = pl.DataFrame({"model": [models]})
    if isinstance(models, pl.Series):
        models = models.to_frame()
    if not isinstance(models, pl.DataFrame):
        msg = (
            f"models must be a model dict, Series, DataFrame or fitted estimator, got {type(models).__name__}"
        )
        raise TypeError(msg)
    if "gap_trace" in models.columns:
        traces = models["gap_trace"]
        keys = models.drop(c for c, t in models.schema.items() if t.is_nested())
    else:
        column = _model_column(models)
        traces = models[column].struct.field("gap_trace")
        keys = models.drop(c for c, t in models.schema.items() if t.is_nested() or c == column)
    rows = keys.iter_rows(named=True) if keys.width else ({} for _ in range(traces.len()))
    labels = [", ".join(f"{k}={v}" for k, v in row.items()) or f"model {i}" for i, row in enumerate(rows)]
    return [(label, trace) for label, trace in zip(labels, traces.to_list(), strict=True) if trace]


def convergence(
    models: Any,
    *,
    path: str | Path | None = None,
    ax: Axes | None = None,
    title: str | None = "Duality gap per check",
    max_lines: int = 50,
) -> Figure:
    """Draw the duality-gap trace of one or many fits on a log scale.

    Parameters
    ----------
    models
        What :func:`gap_traces` accepts: a model dict, a Struct Series, a DataFrame of models
        (group columns become the legend) or a fitted estimator.
    path : str or Path, optional
        Save the figure there (PNG, or any format matplotlib infers from the suffix).
    ax : matplotlib.axes.Axes, optional
        Draw into these axes instead of a new figure.
    title : str or None, default "Duality gap per check"
        Axes title.
    max_lines : int, default 50
        Draw at most this many traces (the first ones); the title says how many were left out.

    Returns
    -------
    matplotlib.figure.Figure
        The figure holding the axes.

    Raises
    ------
    ImportError
        matplotlib is not installed.
    ValueError
        No model has a gap trace (every fit failed), or ``max_lines < 1``.

    Notes
    -----
    The x axis counts gap checks (every ``check_every`` epochs, and after the last one; for the
    accelerated solver, outer iterations). A gap computed as exactly zero cannot be shown on
    a log scale and is left out of its line.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_sdca as ps
    >>> from polars_sdca.plot import convergence
    >>> df = pl.DataFrame({"g": [1, 1, 2, 2], "x": [-1.0, 1.0, -1.0, 1.0], "y": [0, 1, 0, 1]})
    >>> models = df.group_by("g", maintain_order=True).agg(ps.fit("y", ["x"]).alias("m"))
    >>> fig = convergence(models)
    >>> [line.get_label() for line in fig.axes[0].get_lines()]
    ['g=1', 'g=2']
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        msg = "polars_sdca.plot needs matplotlib: pip install 'polars-sdca[plot]'"
        raise ImportError(msg) from e
    if max_lines < 1:
        msg = f"max_lines must be >= 1, got {max_lines}"
        raise ValueError(msg)
    traces = gap_traces(models)
    if not traces:
        msg = "no model has a gap trace to draw (every fit failed or the input is empty)"
        raise ValueError(msg)
    if ax is None:
        fig = Figure(figsize=(6.4, 4.0), layout="constrained")
        ax = fig.subplots()
    else:
        root = ax.get_figure(root=True)
        if root is None:
            msg = "ax does not belong to a figure"
            raise ValueError(msg)
        fig = root
    for label, trace in traces[:max_lines]:
        gaps = [g if g > 0 else math.nan for g in trace]
        ax.plot(range(1, len(gaps) + 1), gaps, label=label, marker="." if len(gaps) <= 30 else None)
    ax.set_yscale("log")
    ax.set_xlabel("gap check")
    ax.set_ylabel("duality gap P(w) - D(alpha)")
    ax.grid(True, which="major", alpha=0.3)
    if title is not None:
        left_out = len(traces) - max_lines
        ax.set_title(title if left_out <= 0 else f"{title} (first {max_lines} of {len(traces)} fits)")
    if min(len(traces), max_lines) <= _LEGEND_MAX:
        ax.legend(fontsize="small")
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
