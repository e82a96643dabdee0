"""Scale out: sharded per-group fits and CoCoA+ for one large model.

Two entry points, each on Ray (``backend="ray"``, the engine Polars targets for distribution;
install with ``pip install polars-sdca[ray]``) or on local threads (``backend="threads"``,
no extra dependency):

- :func:`map_shards` hashes a group key into shards and runs the same Polars query (for example
  ``group_by(key).agg(fit(...))``) on every shard in its own task, then returns the union.
- :func:`fit_cocoa` fits one model on data split across workers with CoCoA+ (distributed SDCA):
  every worker keeps its rows and their duals and runs a local SDCA round per round; the driver
  adds the updates and stops on the global duality gap, the same certificate as :func:`fit`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from polars_sdca import _internal
from polars_sdca.functions import _fit_inputs, _name, _pack

if TYPE_CHECKING:
    from polars_sdca._typing import IntoExpr, IntoFeatures

__all__ = ["fit_cocoa", "map_shards"]

_BACKENDS = ("ray", "threads")
Source = pl.DataFrame | pl.LazyFrame | str | Path | Sequence[str | Path]


def _lazy(source: Source) -> pl.LazyFrame:
    """A DataFrame, LazyFrame, or Parquet path(s) as a LazyFrame."""
    if isinstance(source, pl.LazyFrame):
        return source
    if isinstance(source, pl.DataFrame):
        return source.lazy()
    if isinstance(source, (str, Path)):
        return pl.scan_parquet(source)
    if isinstance(source, Sequence) and source and all(isinstance(p, (str, Path)) for p in source):
        return pl.scan_parquet([str(p) for p in source])
    msg = f"source must be a DataFrame, a LazyFrame or Parquet path(s), got {type(source).__name__}"
    raise TypeError(msg)


def _check_backend(backend: str) -> None:
    if backend not in _BACKENDS:
        msg = f"backend must be one of {_BACKENDS}, got {backend!r}"
        raise ValueError(msg)
    if backend == "ray":
        _ray()


def _ray() -> Any:
    """The ``ray`` module, started locally when no cluster is connected."""
    try:
        import ray
    except ImportError as e:
        msg = "backend='ray' needs Ray: pip install 'polars-sdca[ray]' (or use backend='threads')"
        raise ImportError(msg) from e
    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False)
    return ray


# --- map_shards ------------------------------------------------------------------------------


def _shard_id(by: list[str], n_shards: int, seed: int) -> pl.Expr:
    return pl.struct(by).hash(seed) % n_shards


def _run_shard(
    source: pl.LazyFrame | pl.DataFrame,
    shard: int,
    by: list[str],
    n_shards: int,
    seed: int,
    query: Callable[[pl.LazyFrame], pl.LazyFrame | pl.DataFrame],
    output: str | None,
) -> pl.DataFrame | str:
    """One shard's query result (or the Parquet file it was written to)."""
    lf = source.lazy()
    if isinstance(source, pl.LazyFrame):
        lf = lf.filter(_shard_id(by, n_shards, seed) == shard)
    result = query(lf)
    frame = result.collect() if isinstance(result, pl.LazyFrame) else result
    if output is None:
        return frame
    path = Path(output) / f"part-{shard:05d}.parquet"
    frame.write_parquet(path)
    return str(path)


def map_shards(
    source: Source,
    *,
    by: str | Sequence[str],
    query: Callable[[pl.LazyFrame], pl.LazyFrame | pl.DataFrame],
    n_shards: int,
    backend: str = "ray",
    max_retries: int = 2,
    on_error: str = "null",
    output: str | Path | None = None,
    seed: int = 0,
) -> pl.DataFrame | list[Path]:
    """Run a per-group query on hash shards of the group key, in parallel tasks.

    Every group lands whole in one shard (``hash(by) % n_shards``), so a query that works per
    group, such as ``lf.group_by(by).agg(pl.col("y").sdca.fit(...))``, gives the same rows as
    on the whole frame: the per-group fits are deterministic given their ``seed``.

    Args:
        source: The data: a DataFrame (split by the driver; each shard is shipped to its task),
            a LazyFrame or Parquet path(s) (each task reads and filters its own shard).
        by: The group key column(s).
        query: ``LazyFrame -> LazyFrame | DataFrame``, applied to each shard (it must be
            picklable for Ray: a module-level function or a lambda).
        n_shards: Number of shards (tasks), ``>= 1``.
        backend: ``"ray"`` (tasks on the connected Ray cluster, a local one started when none
            is) or ``"threads"`` (a local thread pool).
        max_retries: Retries of a failed shard task (an exception, or on Ray a crashed worker).
        on_error: ``"null"``: a shard that still fails returns its groups with null outputs and
            the failure in the ``shard_error`` column (always present, null for healthy rows);
            ``"raise"``: raise naming the shard.
        output: A directory: each task writes ``part-NNNNN.parquet`` there and the paths are
            returned instead of the union.
        seed: Seed of the key hash.

    Returns:
        The union of the shards' results, sorted by ``by``, with a ``shard_error`` column when
        ``on_error="null"``; or the written file paths.

    Examples:
        >>> import polars as pl
        >>> from polars_sdca.distributed import map_shards
        >>> df = pl.DataFrame(
        ...     {"g": [1, 1, 2, 2, 3, 3], "y": [0, 1, 1, 0, 0, 1], "x": [0.1, 2.0, 1.5, -1.0, -2.0, 1.0]}
        ... )
        >>> out = map_shards(
        ...     df,
        ...     by="g",
        ...     query=lambda lf: lf.group_by("g").agg(pl.col("y").sdca.fit("x", l2=0.1)),
        ...     n_shards=2,
        ...     backend="threads",
        ... )
        >>> out.select("g", pl.col("y").struct.field("converged"), "shard_error").rows()
        [(1, True, None), (2, True, None), (3, True, None)]
    """
    _check_backend(backend)
    keys = [by] if isinstance(by, str) else list(by) if isinstance(by, Sequence) else []
    if not keys or not all(isinstance(k, str) for k in keys):
        msg = f"by must be a column name or a list of them, got {by!r}"
        raise TypeError(msg)
    if isinstance(n_shards, bool) or not isinstance(n_shards, int) or n_shards < 1:
        msg = f"n_shards must be an integer >= 1, got {n_shards!r}"
        raise ValueError(msg)
    if on_error not in ("null", "raise"):
        msg = f"on_error must be 'null' or 'raise', got {on_error!r}"
        raise ValueError(msg)
    if not callable(query):
        msg = f"query must be a callable LazyFrame -> LazyFrame, got {type(query).__name__}"
        raise TypeError(msg)
    lf = _lazy(source)
    out_dir = None if output is None else str(Path(output).resolve())
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    # A DataFrame is split once by the driver; a lazy source is filtered by each task.
    if isinstance(source, pl.DataFrame):
        shard_ids = source.select(_shard_id(keys, n_shards, seed).alias("__shard")).to_series()
        inputs: list[Any] = [source.filter(shard_ids == s) for s in range(n_shards)]
    else:
        inputs = [lf] * n_shards
    args = [(inputs[s], s, keys, n_shards, seed, query, out_dir) for s in range(n_shards)]
    if backend == "threads":
        results = _threads_map(_run_shard, args, max_retries)
    else:
        ray = _ray()
        task = ray.remote(_run_shard).options(max_retries=max_retries, retry_exceptions=True)
        # Shared inputs go to the object store once, not once per task.
        shared = ray.put(lf) if not isinstance(source, pl.DataFrame) else None
        refs = [task.remote(shared if shared is not None else a[0], *a[1:]) for a in args]
        results = []
        for ref in refs:
            try:
                results.append(ray.get(ref))
            except Exception as e:
                results.append(e)
    failed = [(s, r) for s, r in enumerate(results) if isinstance(r, BaseException)]
    if failed and on_error == "raise":
        s, err = failed[0]
        msg = f"map_shards: shard {s} of {n_shards} failed after {max_retries} retries: {err}"
        raise RuntimeError(msg) from err
    if out_dir is not None:
        if failed:
            s, err = failed[0]
            msg = f"map_shards: shard {s} failed, its file was not written: {err}"
            raise RuntimeError(msg) from err
        return [Path(p) for p in results]
    frames = [r for r in results if isinstance(r, pl.DataFrame)]
    schema = query(lf.head(0)).collect_schema() if not frames else frames[0].schema
    parts = [f.with_columns(shard_error=pl.lit(None, pl.String)) for f in frames]
    for s, err in failed:
        groups = lf.select(keys).filter(_shard_id(keys, n_shards, seed) == s).unique().collect()
        nulls = [pl.lit(None, dt).alias(name) for name, dt in schema.items() if name not in keys]
        parts.append(groups.with_columns(*nulls, shard_error=pl.lit(f"shard {s}: {err}")))
    out = pl.concat([p.select(*schema.names(), "shard_error") for p in parts], how="vertical")
    out = out.sort(keys)
    return out if on_error == "null" else out.drop("shard_error")


def _threads_map(fn: Callable[..., Any], args: list[tuple[Any, ...]], retries: int) -> list[Any]:
    """``fn(*a)`` for each ``a`` on a thread pool, each retried ``retries`` times; the last
    exception of an item that kept failing is returned, not raised."""

    def call(a: tuple[Any, ...]) -> Any:
        for attempt in range(retries + 1):
            try:
                return fn(*a)
            except Exception as e:
                if attempt == retries:
                    return e
        return None

    with ThreadPoolExecutor(max_workers=min(len(args), os.cpu_count() or 1)) as pool:
        return list(pool.map(call, args))


# --- fit_cocoa -------------------------------------------------------------------------------


class CocoaWorker:
    """One partition's rows and duals (a Ray actor or an object on a driver thread)."""

    def __init__(self, frame: pl.DataFrame, packed: bytes) -> None:
        self._part = _internal.CocoaPartition(list(frame.iter_columns()), packed)

    def shape(self) -> tuple[int, int, bool]:
        """Rows, inferred feature width, and whether the loss is a classification loss."""
        return self._part.n_rows, self._part.n_features, self._part.classification

    def round(self, w: bytes, spec: tuple[int, float, float, int, int]) -> tuple[bytes, float, float, float]:
        """One CoCoA+ round: ``(update bytes, loss sum, conjugate sum, gap sum)``."""
        return self._part.round(w, spec)


class _Pool:
    """The workers of one fit on a backend, recreated from their partition when lost."""

    def __init__(self, backend: str, frames: list[pl.DataFrame], packed: bytes) -> None:
        self.backend = backend
        self.packed = packed
        if backend == "ray":
            ray = _ray()
            self.ray = ray
            self.actor = ray.remote(CocoaWorker)
            # A fraction of a CPU each when there are more partitions than CPUs, so that every
            # actor is placed (whole CPUs would leave the extra actors pending forever).
            self.cpus = min(1.0, ray.cluster_resources().get("CPU", 1.0) / len(frames))
            # The partitions stay in the object store: a lost actor is rebuilt from them.
            self.frames = [ray.put(f) for f in frames]
            self.workers = [self._start(k) for k in range(len(frames))]
        else:
            self.frames = frames
            self.workers = [CocoaWorker(f, packed) for f in frames]
            self.threads = ThreadPoolExecutor(max_workers=min(len(frames), os.cpu_count() or 1))

    def _start(self, k: int) -> Any:
        return self.actor.options(num_cpus=self.cpus).remote(self.frames[k], self.packed)

    def restart(self, k: int) -> None:
        self.workers[k] = self._start(k)

    def call(self, method: str, args: list[tuple[Any, ...]]) -> list[Any]:
        """``worker.method(*args[k])`` on every worker; a lost Ray actor's entry is its error."""
        if self.backend == "threads":
            futures = [
                self.threads.submit(getattr(w, method), *a) for w, a in zip(self.workers, args, strict=True)
            ]
            return [f.result() for f in futures]
        refs = [getattr(w, method).remote(*a) for w, a in zip(self.workers, args, strict=True)]
        out = []
        for ref in refs:
            try:
                out.append(self.ray.get(ref))
            except self.ray.exceptions.RayActorError as e:
                out.append(e)
        return out

    def close(self) -> None:
        if self.backend == "threads":
            self.threads.shutdown()
        else:
            for w in self.workers:
                self.ray.kill(w)


def fit_cocoa(
    source: Source,
    label: IntoExpr,
    features: IntoFeatures,
    *,
    n_partitions: int = 2,
    local_epochs: int = 1,
    aggregation: str = "add",
    tol: float = 1e-6,
    max_rounds: int = 500,
    backend: str = "ray",
    max_restarts: int = 3,
    on_round: Callable[[dict[str, Any]], None] | None = None,
    **options: Any,
) -> pl.DataFrame:
    """Fit one model with CoCoA+ (distributed SDCA) over ``n_partitions`` workers.

    The rows are split into ``n_partitions`` seeded random partitions; each worker (a Ray actor
    or a thread) holds one partition and its duals. A round sends the current model ``w`` to
    every worker, which runs ``local_epochs`` SDCA passes on its CoCoA+ subproblem (Rust kernel,
    GIL released) and returns its update and its share of the primal, dual and gap sums; the
    driver adds the updates (``aggregation="add"``: CoCoA+, ``sigma' = K``; ``"average"``:
    CoCoA, each update weighted ``1/K``) and stops when the global relative duality gap of the
    round's model is at most ``tol``. With one partition and ``local_epochs=1`` a round is an
    SDCA epoch.

    Communication per round: one ``(n_features + 1)``-vector of float64 to and from each worker.
    A lost Ray actor is recreated from its partition (kept in the object store) with zero duals,
    which are feasible, so the gap stays a valid certificate; its former share leaves the dual
    sum (up to ``max_restarts`` times in all).

    Args:
        source: DataFrame, LazyFrame or Parquet path(s); the driver collects the needed columns.
        label, features: As for :func:`polars_sdca.fit` (binary or regression losses).
        n_partitions: ``K >= 1`` workers.
        local_epochs: ``H >= 1`` SDCA passes per worker per round.
        aggregation: ``"add"`` (CoCoA+) or ``"average"`` (CoCoA).
        tol: Relative duality gap to stop at.
        max_rounds: Round budget (``status`` tells when it ran out).
        backend: ``"ray"`` or ``"threads"``.
        max_restarts: Lost actors recreated before the fit fails.
        on_round: Called after every round with ``{"round", "primal", "dual", "gap",
            "workers"}`` (the Ray actor handles or thread workers), for progress or tests.
        **options: The :func:`polars_sdca.fit` options ``loss``, ``l2`` (> 0), ``l1``,
            ``smoothing``, ``epsilon``, ``quantile``, ``fit_intercept``, ``intercept_scaling``,
            ``weights``, ``n_features``, ``null_policy``, ``sampling`` (within a worker),
            ``seed``.

    Returns:
        A one-row DataFrame with the model struct of :func:`polars_sdca.fit` (``solver`` is
        ``"cocoa+"`` or ``"cocoa"``, ``epochs`` counts passes over the data, ``gap_trace`` one
        gap per round), usable by :func:`polars_sdca.predict`.

    Examples:
        >>> import polars as pl
        >>> from polars_sdca.distributed import fit_cocoa
        >>> df = pl.DataFrame(
        ...     {"y": [0, 1, 1, 0, 1, 0, 1, 1], "x": [-1.0, 2.0, 1.5, -0.5, 0.7, -2.0, 0.1, 1.1]}
        ... )
        >>> model = fit_cocoa(df, "y", "x", n_partitions=2, l2=0.1, tol=1e-9, backend="threads")
        >>> model["y"].struct.field("converged").item(), model["y"].struct.field("solver").item()
        (True, 'cocoa+')
    """
    _check_backend(backend)
    for name, value, low in (
        ("n_partitions", n_partitions, 1),
        ("local_epochs", local_epochs, 1),
        ("max_rounds", max_rounds, 1),
        ("max_restarts", max_restarts, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            msg = f"{name} must be an integer >= {low}, got {value!r}"
            raise ValueError(msg)
    if aggregation not in ("add", "average"):  # before any data is read; the core checks it too
        msg = f"aggregation must be 'add' or 'average', got {aggregation!r}"
        raise ValueError(msg)
    unsupported = {
        "solver",
        "warm_start",
        "max_epochs",
        "check_every",
        "on_error",
        "max_seconds",
        "max_memory",
        "groups",
        "group_norm",
        "output",
        "pdprox_variant",
    } & set(options)
    if unsupported:
        msg = f"fit_cocoa does not take {sorted(unsupported)}: it runs plain SDCA rounds (fit takes them)"
        raise TypeError(msg)
    options = {**options, "tol": tol}
    args, layout, params = _fit_inputs(label, features, options)
    if params["l2"] <= 0:
        msg = f"fit_cocoa needs l2 > 0 (got {params['l2']}): the CoCoA+ subproblems are l2-strongly convex"
        raise ValueError(msg)
    packed = _pack(layout, {**params, "solver": "sdca"}, _internal.check_fit_kwargs)
    label_name = _name(args[0])
    data = _lazy(source).select([a.alias(f"__sdca_{i}") for i, a in enumerate(args)]).collect()
    n = data.height
    k_parts = int(n_partitions)
    part = np.random.default_rng(params["seed"]).permutation(n) % k_parts
    frames = [data.filter(pl.Series(part == k)) for k in range(k_parts)]
    if any(f.height == 0 for f in frames):
        msg = f"fit_cocoa: {n} rows cannot fill {k_parts} partitions; use fewer partitions"
        raise ValueError(msg)
    pool = _Pool(backend, frames, packed)
    try:
        shapes = pool.call("shape", [()] * k_parts)
        _raise_lost(shapes, "starting")
        shape = (sum(s[0] for s in shapes), layout["n_features"] or max(s[1] for s in shapes), k_parts)
        driver = _internal.CocoaDriver(
            packed,
            data["__sdca_0"].rename(label_name),
            shape,
            aggregation,
            int(local_epochs),
            (int(max_rounds), int(max_restarts)),
        )
        _rounds(pool, driver, k_parts, on_round)
    finally:
        pool.close()
    return driver.result().to_frame()


def _raise_lost(results: list[Any], when: str) -> None:
    for k, r in enumerate(results):
        if isinstance(r, BaseException):
            msg = f"fit_cocoa: partition {k}'s worker was lost while {when}: {r}"
            raise RuntimeError(msg) from r


def _rounds(
    pool: _Pool,
    driver: _internal.CocoaDriver,
    k_parts: int,
    on_round: Callable[[dict[str, Any]], None] | None,
) -> None:
    """Runs the rounds: the driver (Rust) gives each round's model and specs and certifies the
    outcomes; this loop only schedules the workers and restarts the lost ones."""
    r = 0
    while not driver.done:
        w = driver.model()
        out = pool.call("round", [(w, driver.spec(k)) for k in range(k_parts)])
        lost = [k for k, o in enumerate(out) if isinstance(o, BaseException)]
        try:
            cert = driver.absorb([None if k in lost else o for k, o in enumerate(out)])
        except ValueError as e:
            if not lost:
                raise
            raise RuntimeError(f"fit_cocoa: {e}") from out[lost[0]]
        for k in lost:
            pool.restart(k)
        if cert is not None and on_round is not None:
            primal, dual, gap = cert
            on_round({"round": r, "primal": primal, "dual": dual, "gap": gap, "workers": pool.workers})
        r += 1
