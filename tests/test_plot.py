"""Convergence plots (`polars_sdca.plot`): the lines are the models' gap traces, PNGs are written.

The figures are built without pyplot, so PNGs go through matplotlib's Agg canvas.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib.image
import numpy as np
import polars as pl
import pytest
from matplotlib.figure import Figure

import polars_sdca as ps
from polars_sdca.plot import convergence, gap_traces
from polars_sdca.sklearn import SDCAClassifier

import references as R


@pytest.fixture(scope="module")
def per_group() -> pl.DataFrame:
    """Breast cancer split into three groups by thresholds on two features; each group fitted
    with the plugin (real data, different conditioning per group)."""
    X, y = R.breast_cancer_pm1()
    frame = pl.DataFrame([pl.Series("X", X), pl.Series("y", y)]).with_columns(
        g=pl.when(pl.Series(X[:, 0]) > 0.5)
        .then(pl.lit("a"))
        .when(pl.Series(X[:, 1]) > 0)
        .then(pl.lit("b"))
        .otherwise(pl.lit("c"))
    )
    return frame.group_by("g", maintain_order=True).agg(ps.fit("y", "X", l2=1e-4, tol=1e-8).alias("model"))


def _ydata(fig: Figure) -> list[np.ndarray]:
    return [np.asarray(line.get_ydata(), dtype=float) for line in fig.axes[0].get_lines()]


def test_lines_are_the_gap_traces_and_png_is_written(per_group: pl.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "convergence.png"
    fig = convergence(per_group, path=path)
    traces = per_group["model"].struct.field("gap_trace").to_list()
    lines = _ydata(fig)
    assert len(lines) == len(traces)
    for line, trace in zip(lines, traces, strict=True):
        np.testing.assert_array_equal(line, [g if g > 0 else math.nan for g in trace])
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == [f"g={g}" for g in per_group["g"]]
    assert [list(line.get_xdata()) for line in ax.get_lines()] == [list(range(1, len(t) + 1)) for t in traces]
    assert ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["g=a", "g=b", "g=c"]
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(path)
    assert image.shape[:2] == (480, 768)  # 4.0 x 6.4 inches at 120 dpi


def test_every_model_form_is_accepted(per_group: pl.DataFrame) -> None:
    traces = per_group["model"].struct.field("gap_trace").to_list()
    assert [t for _, t in gap_traces(per_group["model"])] == traces
    assert [label for label, _ in gap_traces(per_group["model"])] == ["model 0", "model 1", "model 2"]
    assert gap_traces(per_group["model"][0]) == [("model 0", traces[0])]
    assert gap_traces(per_group.unnest("model").select("g", "gap_trace")) == list(
        zip(["g=a", "g=b", "g=c"], traces, strict=True)
    )
    X, y = R.breast_cancer_pm1()
    clf = SDCAClassifier().fit(X, y)
    assert gap_traces(clf) == [("class=1.0", clf.models_["model"].struct.field("gap_trace")[0].to_list())]
    crf = pl.DataFrame({"s": [0, 0, 1, 1], "x": [1.0, 0.0, 1.0, 0.0], "t": ["A", "B", "A", "B"]}).select(
        ps.crf_fit("t", ["x"], sequence="s", l2=0.1).alias("crf")
    )
    assert gap_traces(crf)[0][1] == crf["crf"].struct.field("gap_trace")[0].to_list()
    with pytest.raises(TypeError, match="models must be a model dict"):
        gap_traces([1, 2])
    with pytest.raises(ValueError, match="no model column"):
        gap_traces(pl.DataFrame({"a": [1]}))


def test_failed_fits_are_left_out() -> None:
    frame = pl.DataFrame(
        {"g": [1, 1, 1, 1, 2, 2], "x": [-2.0, -1.0, 1.0, 2.0, 1.0, 2.0], "y": [0, 0, 1, 1, 1, 1]}
    )
    models = frame.group_by("g", maintain_order=True).agg(ps.fit("y", ["x"], on_error="null").alias("m"))
    assert [label for label, _ in gap_traces(models)] == ["g=1"]
    with pytest.raises(ValueError, match="no model has a gap trace"):
        convergence(models.filter(pl.col("g") == 2))


def test_many_fits_are_capped_and_drawn_into_given_axes() -> None:
    rng = np.random.default_rng(0)
    frame = pl.DataFrame(
        {"g": np.repeat(np.arange(60), 20), "x": rng.normal(size=1200), "y": np.tile([-1, 1], 600)}
    )
    models = frame.group_by("g", maintain_order=True).agg(ps.fit("y", ["x"]).alias("m"))
    fig = Figure()
    ax = fig.subplots()
    assert convergence(models, ax=ax, max_lines=50) is fig
    assert len(ax.get_lines()) == 50
    assert ax.get_title() == "Duality gap per check (first 50 of 60 fits)"
    assert ax.get_legend() is None
    with pytest.raises(ValueError, match="max_lines must be >= 1"):
        convergence(models, max_lines=0)


def test_missing_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install 'polars-sdca\[plot\]'"):
        convergence({"gap_trace": [1.0]})
