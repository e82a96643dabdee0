"""Batch command line for feature-store jobs: one model per group, and predictions by key.

::

    python -m polars_sdca fit --input events.parquet --label clicked --sparse features \\
        --group-by store --loss logistic --l2 1e-4 --output models.parquet
    python -m polars_sdca predict --input new.parquet --models models.parquet \\
        --sparse features --group-by store --kind proba --output scores.parquet

``fit`` scans the input lazily (Parquet, CSV / TSV or Arrow IPC, by suffix; globs allowed),
reads only the columns it needs, and fits the groups in batches of keys, so that a terminal
shows a progress line (groups done, rate, failures) on stderr. Every group gets one row in the
output: its keys and the model struct of :func:`polars_sdca.fit`. By default a group that
cannot be fitted does not stop the job (``--on-error null``): its row carries a model without
coefficients whose ``status`` says why. ``predict`` joins the models back to the rows by key
(or broadcasts the single model of an ungrouped fit) and streams the rows with a prediction
column to the output.

``--cv K`` (or ``--fold-column``) cross-validates each group's regularization path instead, by
:func:`polars_sdca.fit_cv`: the grid is ``--l1-grid`` / ``--l2-grid`` (comma-separated values)
or computed (``--n-l1``, ``--l1-min-ratio``, ``--n-l2``, ...), and each group's row holds the
refit model in ``model`` (so ``predict`` takes the file as it is) and the held-out curve in
``cv`` (``values``, ``mean``, ``se``, ``fold_scores``, ``best``, ``chosen``, ``scoring``).
``--l1-ratio`` takes one elastic-net mixing (``l2`` tied to ``l1`` along the path) or a
comma-separated list of them: one path per value on the same folds, the best ``(l1_ratio,
l1)`` pair refit; ``cv`` then also says which ratio each entry belongs to (``l1_ratio``) and
which was refit (``chosen_l1_ratio``, ``best_l1_ratio``), and the model's ``l1`` / ``l2`` are
the chosen pair's.

Exit codes: 0 every group was fitted (every row got a prediction); 1 the output was written
but some groups failed (some rows got no prediction), with a summary on stderr; 2 nothing was
written: bad arguments, an unreadable input, or a data error under ``--on-error raise``.
Outputs are written to a temporary file and renamed, so a failed job leaves no partial file.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import polars as pl

from polars_sdca import _internal
from polars_sdca.functions import fit, fit_cv, fit_groups, predict

__all__ = ["main"]

_BATCH = "__sdca_batch"
_MODEL = "__sdca_model"
_SHOWN_FAILURES = 5
"""Failed groups listed in the summary (all of them are in the output)."""

_SCANNERS: dict[str, Callable[[str], pl.LazyFrame]] = {
    ".parquet": pl.scan_parquet,
    ".pq": pl.scan_parquet,
    ".csv": pl.scan_csv,
    ".tsv": partial(pl.scan_csv, separator="\t"),
    ".ipc": pl.scan_ipc,
    ".arrow": pl.scan_ipc,
    ".feather": pl.scan_ipc,
}
_SINKS: dict[str, Callable[[pl.LazyFrame, Path], Any]] = {
    ".parquet": pl.LazyFrame.sink_parquet,
    ".pq": pl.LazyFrame.sink_parquet,
    ".csv": pl.LazyFrame.sink_csv,
    ".ipc": pl.LazyFrame.sink_ipc,
    ".arrow": pl.LazyFrame.sink_ipc,
    ".feather": pl.LazyFrame.sink_ipc,
}
_FIT_OPTIONS: dict[str, dict[str, Any]] = {o["name"]: o for o in _internal.fit_options()}
"""The fit options of the core's schema; each one the command line can spell becomes a flag
(with its help and choices), passed through to :func:`fit` when given."""
_PATH_OPTIONS: dict[str, dict[str, Any]] = {o["name"]: o for o in _internal.path_options()}
"""The grid options of the schema (flags of ``--cv`` jobs)."""
_CV_OPTIONS: dict[str, dict[str, Any]] = {o["name"]: o for o in _internal.cv_options()}
"""The cross-validation options of the schema (flags of ``--cv`` jobs; ``folds`` is ``--cv``)."""
_NOT_FLAGS = ("weights", "warm_start", "groups")
"""Options without a flag of the schema's kind: ``--weights`` names the column (a data input),
and models and per-feature group lists do not fit on a command line."""
_RENAMED = {"output": "pdprox_output", "folds": "cv"}
"""Options whose flag would clash with a flag of the job (``--output`` is the models file), or
that name the job (``--cv K``: cross-validate with K folds)."""
_CV = "cv"
"""The output column of the held-out curve of a ``--cv`` job."""


def _dest(name: str) -> str:
    """The argparse destination (and flag, with ``-``) of a schema option."""
    return _RENAMED.get(name, name)


_NESTED_SINKS = (".parquet", ".pq", ".ipc", ".arrow", ".feather")
"""Formats that can hold the model structs."""


class _UsageError(ValueError):
    """A command-line value or an input file that cannot work."""


def _scan(path: str, flag: str) -> pl.LazyFrame:
    scanner = _SCANNERS.get(Path(path).suffix.lower())
    if scanner is None:
        msg = f"{flag} {path}: unknown file type; expected one of {', '.join(_SCANNERS)}"
        raise _UsageError(msg)
    return scanner(path)


def _output(path: str, allowed: Sequence[str]) -> Path:
    suffix = Path(path).suffix.lower()
    if suffix not in allowed:
        msg = f"--output {path}: this output needs one of the file types {', '.join(allowed)}"
        raise _UsageError(msg)
    return Path(path)


def _sink(frame: pl.LazyFrame, path: Path) -> None:
    """Write through a temporary sibling file, renamed only once complete."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        _SINKS[path.suffix.lower()](frame, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _names(text: str | None) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()] if text else []


def _features(args: argparse.Namespace) -> tuple[str | list[str], list[str]]:
    """The ``features`` argument of the plugin and the input columns it reads."""
    if args.sparse:
        return args.sparse, [args.sparse]
    names = _names(args.features)
    if not names:
        msg = "--features is empty; give comma-separated numeric columns"
        raise _UsageError(msg)
    return names, names


class _Progress:
    """One status line on ``stream``, redrawn in place after each batch (when enabled)."""

    def __init__(self, total: int, stream: TextIO, enabled: bool) -> None:
        self.total, self.stream, self.enabled = total, stream, enabled
        self.start = time.perf_counter()

    def rate(self, done: int) -> float:
        return done / max(time.perf_counter() - self.start, 1e-9)

    def update(self, done: int, failed: int) -> None:
        if not self.enabled:
            return
        rate = self.rate(done)
        eta = (self.total - done) / rate if rate > 0 else 0.0
        line = (
            f"fit: {done:,}/{self.total:,} groups ({done / max(self.total, 1):.0%}), "
            f"{rate:,.0f} groups/s, {failed:,} failed, eta {eta:.0f} s"
        )
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")


def _failed(models: pl.Series) -> pl.Series:
    """Groups without coefficients: the fit was not done (``status`` says why)."""
    return models.is_null() | models.struct.field("coef").is_null()


def _fit_groups(
    frame: pl.DataFrame,
    keys: list[str],
    label: str,
    fit_args: tuple[Any, dict[str, Any], bool],
    batch: int,
    progress: _Progress,
) -> pl.DataFrame:
    """One model row per group (keys, then the model in ``_MODEL``), fitted ``batch`` groups at a
    time by :func:`polars_sdca.fit_groups` (each batch's groups in parallel in one plugin call);
    with ``cv`` the cross-validated refit, and the curve in ``cv``."""
    features, options, cv = fit_args
    if not keys:
        one = fit_cv if cv else fit
        out = _split_cv(frame.select(one(label, features, **options).alias(_MODEL)), cv)
        progress.update(1, int(_failed(out[_MODEL]).sum()))
        return out
    ids = frame.select(keys).unique(maintain_order=True).with_row_index(_BATCH)
    ids = ids.with_columns(pl.col(_BATCH) // batch)
    tagged = frame.join(ids, on=keys, how="left", nulls_equal=True, maintain_order="left")
    expr = fit_groups(label, features, by=keys, kind="cv" if cv else "model", **options).alias(_MODEL)
    done = failed = 0
    results = []
    for part in tagged.partition_by(_BATCH, maintain_order=True, include_key=False):
        out = _split_cv(part.select(expr).unnest(_MODEL).rename({label: _MODEL}), cv)
        done += out.height
        failed += int(_failed(out[_MODEL]).sum())
        progress.update(done, failed)
        results.append(out)
    return pl.concat(results)


def _split_cv(out: pl.DataFrame, cv: bool) -> pl.DataFrame:
    """A ``--cv`` job's rows: the refit model in ``_MODEL``, the rest of the struct in ``cv``."""
    if not cv:
        return out
    fields = [f.name for f in out.schema[_MODEL].fields if f.name != "model"]  # type: ignore[attr-defined]
    return out.with_columns(
        pl.struct(pl.col(_MODEL).struct.field(*fields)).alias(_CV),
        pl.col(_MODEL).struct.field("model").alias(_MODEL),
    )


def _fit_options(args: argparse.Namespace) -> tuple[dict[str, Any], bool]:
    """The fit options given on the command line (the others keep :func:`fit`'s defaults), and
    whether the job cross-validates (``--cv`` or ``--fold-column``)."""
    cv = args.cv is not None or args.fold_column is not None
    schema = _FIT_OPTIONS | _PATH_OPTIONS | _CV_OPTIONS
    given = {name: getattr(args, _dest(name), None) for name in schema if name not in _NOT_FLAGS}
    options = {name: value for name, value in given.items() if value is not None}
    grid = [name for name in options if name in _PATH_OPTIONS or name in _CV_OPTIONS]
    for name, values in (("l1", args.l1_grid), ("l2", args.l2_grid)):
        if values is not None:
            options[name] = values
            grid.append(f"{name}_grid")
    if grid and not cv:
        flags = ", ".join(f"--{_dest(n).replace('_', '-')}" for n in grid)
        msg = f"{flags}: grid and cross-validation options need --cv K (or --fold-column)"
        raise _UsageError(msg)
    if args.weights:
        options["weights"] = args.weights
    return options, cv


def _floats(text: str) -> list[float]:
    """A comma-separated grid, for ``--l1-grid`` / ``--l2-grid``."""
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        msg = f"expected comma-separated numbers, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def _ratios(text: str) -> float | list[float]:
    """``--l1-ratio``: one mixing, or comma-separated mixings (one path each in a ``--cv`` job)."""
    values = _floats(text)
    if not values:
        msg = f"expected a number in (0, 1] or comma-separated numbers, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return values[0] if len(values) == 1 else values


def _summary_keys(row: dict[str, Any], keys: list[str]) -> str:
    return ", ".join(f"{k}={row[k]!r}" for k in keys) or "(all rows)"


def _run_fit(args: argparse.Namespace, stderr: TextIO) -> int:
    """``fit``: one model row per group."""
    output = _output(args.output, _NESTED_SINKS)
    if args.batch_size < 1:
        msg = f"--batch-size must be >= 1, got {args.batch_size}"
        raise _UsageError(msg)
    keys = _names(args.group_by)
    features, feature_columns = _features(args)
    options, cv = _fit_options(args)
    extra = [c for c in (args.weights, args.fold_column) if c]
    needed = list(dict.fromkeys([*keys, args.label, *feature_columns, *extra]))
    frame = _scan(args.input, "--input").select(needed).collect()
    if frame.is_empty():
        msg = f"--input {args.input} has no rows"
        raise _UsageError(msg)
    n_groups = frame.select(keys).n_unique() if keys else 1
    enabled = {"always": True, "never": False}.get(args.progress, stderr.isatty())
    progress = _Progress(n_groups, stderr, enabled)
    try:
        fit_args = (features, options, cv)
        models = _fit_groups(frame, keys, args.label, fit_args, args.batch_size, progress)
    finally:
        progress.close()
    seconds = time.perf_counter() - progress.start
    _sink(models.rename({_MODEL: "model"}).lazy(), output)
    failed = _failed(models[_MODEL])
    late = ~failed & ~models[_MODEL].struct.field("converged").fill_null(False)
    stderr.write(
        f"fit: {models.height:,} groups in {seconds:.1f} s ({progress.rate(models.height):,.0f} groups/s): "
        f"{models.height - int(failed.sum()):,} fitted ({int(late.sum()):,} not converged), "
        f"{int(failed.sum()):,} failed; wrote {output}\n"
    )
    if not failed.any():
        return 0
    shown = models.filter(failed).head(_SHOWN_FAILURES)
    stderr.write(f"failed groups (first {shown.height}; the status of every group is in the output):\n")
    for row in shown.iter_rows(named=True):
        status = row[_MODEL]["status"] if row[_MODEL] else "no model"
        stderr.write(f"  {_summary_keys(row, keys)}: {status}\n")
    return 1


def _run_predict(args: argparse.Namespace, stderr: TextIO) -> int:
    """``predict``: the input rows with a prediction column, models joined by key."""
    output = _output(args.output, list(_SINKS))
    keys = _names(args.group_by)
    features, _ = _features(args)
    rows = _scan(args.input, "--input")
    models = _scan(args.models, "--models").rename({"model": _MODEL})
    keep = _names(args.keep) or rows.collect_schema().names()
    if keys:
        rows = rows.join(
            models.select(*keys, _MODEL), on=keys, how="left", nulls_equal=True, maintain_order="left"
        )
        model: str | pl.Series = _MODEL
    else:
        single = models.select(_MODEL).collect()
        if single.height != 1:
            msg = f"--models {args.models} has {single.height} models; pass --group-by with their key columns"
            raise _UsageError(msg)
        model = single[_MODEL]
    scored = rows.with_columns(predict(model, features, kind=args.kind).alias(args.column))
    _sink(scored.select(*keep, args.column), output)
    counts = _scan(str(output), "--output").select(pl.len(), pl.col(args.column).null_count()).collect()
    n_rows, missing = counts.row(0)
    stderr.write(f"predict: {n_rows:,} rows, {missing:,} without a prediction; wrote {output}\n")
    if missing:
        stderr.write(
            "rows without a prediction have no model for their group, a failed model (see the "
            "status in the models file) or null features\n"
        )
        return 1
    return 0


def _add_option(group: argparse._ArgumentGroup, spec: dict[str, Any]) -> None:
    """The flag of one schema option, with its help, choices and type."""
    name = spec["name"]
    if name in _NOT_FLAGS:
        return
    flag = f"--{_dest(name).replace('_', '-')}"
    default = spec["default"]
    applies = "" if spec["applies"] == "all" else f"; {spec['applies']}"
    if name == "on_error":
        # A batch job keeps going past a failed group by default.
        group.add_argument(
            flag,
            default="null",
            choices=spec["choices"],
            help="null (default): a failed group gets a model row with its status; raise: stop the job",
        )
    elif spec["kind"] == "bool":
        group.add_argument(
            flag, action=argparse.BooleanOptionalAction, help=f"{spec['help']} (default {default})"
        )
    elif spec["kind"] == "choice":
        group.add_argument(flag, choices=spec["choices"], help=f"{spec['help']} (default {default}{applies})")
    elif spec["kind"] == "column":
        group.add_argument(flag, help=f"{spec['help']} ({spec['applies']})")
    elif name == "l1_ratio":
        group.add_argument(
            flag,
            type=_ratios,
            metavar="R[,R,...]",
            help="scikit-learn's ElasticNet mixing, in (0, 1]: the l1 path ties l2 = l1 (1 - R) / R; "
            "comma-separated values cross-validate one path per value on the same folds and refit "
            "the best (ratio, l1) pair (its ratio is the cv column's chosen_l1_ratio)",
        )
    elif name == "folds":
        group.add_argument(
            flag,
            type=int,
            metavar="K",
            help=f"cross-validate each group's path with K folds: {spec['help']} (default {default} "
            "with --fold-column)",
        )
    else:
        kind = float if spec["kind"] == "float" else int
        shown = "none" if default is None else default
        group.add_argument(flag, type=kind, help=f"{spec['help']} (default {shown}{applies})")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m polars_sdca",
        description="Fit SDCA models per group from a file, or predict with them by key.",
        epilog="Exit codes: 0 success; 1 output written but some groups failed; 2 nothing written.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    data = argparse.ArgumentParser(add_help=False)
    data.add_argument("--input", required=True, help="Parquet, CSV / TSV or Arrow IPC file (globs allowed)")
    cols = data.add_mutually_exclusive_group(required=True)
    cols.add_argument("--features", help="comma-separated numeric feature columns")
    cols.add_argument(
        "--sparse", help="one List(Struct{index, value}) column (or one List / Array vector column)"
    )
    data.add_argument("--group-by", help="comma-separated key columns: one model per group")

    fit_cmd = commands.add_parser("fit", parents=[data], help="fit one model per group")
    fit_cmd.set_defaults(run=_run_fit)
    fit_cmd.add_argument("--label", required=True, help="label column")
    fit_cmd.add_argument("--weights", help="sample-weight column")
    fit_cmd.add_argument("--output", required=True, help="models file (.parquet or Arrow IPC)")
    options = fit_cmd.add_argument_group("fit options (default: as polars_sdca.fit)")
    for spec in _FIT_OPTIONS.values():
        _add_option(options, spec)
    cv_options = fit_cmd.add_argument_group(
        "cross-validation (default: as polars_sdca.fit_cv; the output's cv column holds the curve)"
    )
    for spec in [*_CV_OPTIONS.values(), *_PATH_OPTIONS.values()]:
        _add_option(cv_options, spec)
    for name in ("l1", "l2"):
        cv_options.add_argument(
            f"--{name}-grid",
            type=_floats,
            metavar="V,V,...",
            help=f"comma-separated {name} values: the path runs over {name} (the other penalty fixed)",
        )
    run = fit_cmd.add_argument_group("job")
    run.add_argument("--batch-size", type=int, default=1000, help="groups per batch (default 1000)")
    run.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="progress line on stderr (auto: when stderr is a terminal)",
    )

    predict_cmd = commands.add_parser("predict", parents=[data], help="predict with per-group models")
    predict_cmd.set_defaults(run=_run_predict)
    predict_cmd.add_argument("--models", required=True, help="models file written by fit")
    predict_cmd.add_argument("--kind", choices=("decision", "class", "proba"), default="decision")
    predict_cmd.add_argument("--column", default="prediction", help="name of the prediction column")
    predict_cmd.add_argument("--keep", help="comma-separated input columns to keep (default: all)")
    predict_cmd.add_argument("--output", required=True, help="Parquet, CSV or Arrow IPC file")
    return parser


def main(argv: Sequence[str] | None = None, *, stderr: TextIO | None = None) -> int:
    """Run the command line; returns the exit code.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (default ``sys.argv[1:]``).
    stderr : text stream, optional
        Where the progress line and the summary go (default ``sys.stderr``).

    Returns
    -------
    int
        0 success; 1 output written but some groups failed or rows got no prediction;
        2 nothing written.

    Examples
    --------
    >>> import io, tempfile
    >>> from pathlib import Path
    >>> import polars as pl
    >>> from polars_sdca.cli import main
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = Path(tmp.name)
    >>> pl.DataFrame(
    ...     {"g": [1, 1, 1, 1, 2, 2], "x": [-2.0, -1.0, 1.0, 2.0, 1.0, 2.0], "y": [0, 0, 1, 1, 1, 1]}
    ... ).write_parquet(folder / "data.parquet")
    >>> log = io.StringIO()
    >>> main(["fit", "--input", str(folder / "data.parquet"), "--label", "y", "--features", "x",
    ...       "--group-by", "g", "--output", str(folder / "models.parquet")], stderr=log)
    1
    >>> log.getvalue().splitlines()[-1].split(": ")[:3]
    ['  g=2', 'column "y"', 'all labels are +1']
    >>> models = pl.read_parquet(folder / "models.parquet")
    >>> models["g"].to_list(), models["model"].struct.field("status").str.head(8).to_list()
    ([1, 2], ['ok', 'column "'])
    >>> main(["predict", "--input", str(folder / "data.parquet"), "--models", str(folder / "models.parquet"),
    ...       "--features", "x", "--group-by", "g", "--kind", "class", "--output", str(folder / "p.csv")],
    ...      stderr=log)
    1
    >>> pl.read_csv(folder / "p.csv")["prediction"].to_list()
    [0, 0, 1, 1, None, None]
    >>> tmp.cleanup()
    """
    stream = sys.stderr if stderr is None else stderr
    args = _parser().parse_args(argv)
    try:
        code: int = args.run(args, stream)
    except (pl.exceptions.PolarsError, OSError, ValueError, TypeError) as e:
        stream.write(f"python -m polars_sdca {args.command}: error: {e}\n")
        return 2
    return code
