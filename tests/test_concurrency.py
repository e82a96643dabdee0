"""Several Python threads collecting plans with fits at once (issue 8, item 5).

Polars releases the GIL while it collects, so plugin calls from different threads run at the
same time on its pool. The plugin keeps no global mutable state (the SIGINT flag of
``interrupt.rs`` aside, which only ever stops fits), so every thread must get exactly the
models a sequential run gives.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import polars as pl
from polars.testing import assert_frame_equal

import polars_sdca as ps


def _plans(breast_cancer: pl.DataFrame) -> list[pl.LazyFrame]:
    features = [c for c in breast_cancer.columns if c != "y"]
    lf = breast_cancer.lazy().with_row_index("i").with_columns(g=pl.col("i") % 7)
    plans = []
    # Every solver that takes the loss, named: "auto" would pick Newton for the smooth ones
    # (30 features), leaving SDCA's random order untested here.
    cases = [
        ("logistic", 0.0, ("sdca", "accelerated", "newton")),
        ("hinge", 0.0, ("sdca", "pdprox")),
        ("smooth_hinge", 1e-3, ("sdca", "accelerated")),
        ("squared", 1e-4, ("sdca", "accelerated", "pdprox")),
    ]
    for seed, (loss, l1, solvers) in enumerate(cases):
        for solver in solvers:
            opts = {"loss": loss, "seed": seed, "solver": solver}
            model = ps.fit("y", features, l1=l1, l2=1e-3, tol=1e-8, max_epochs=300, **opts)  # type: ignore[arg-type]
            plans.append(lf.group_by("g").agg(model.alias("m")).sort("g"))
            rows = ps.fit_rows("y", features, l2=1e-2, max_epochs=300, **opts).over("g")  # type: ignore[arg-type]
            plans.append(lf.select("i", rows.alias("r")).sort("i"))
    return plans


def test_threads_collecting_at_once_match_sequential_runs(breast_cancer: pl.DataFrame) -> None:
    plans = _plans(breast_cancer)
    sequential = [p.collect() for p in plans]
    solvers = {m["solver"] for frame in sequential[::2] for m in frame["m"].to_list()}
    assert solvers == {"sdca", "accelerated", "newton", "pdprox"}
    # Every plan three times, all submitted at once to four threads.
    with ThreadPoolExecutor(max_workers=4) as pool:
        concurrent = list(pool.map(lambda p: p.collect(), plans * 3))
    for k, frame in enumerate(concurrent):
        assert_frame_equal(frame, sequential[k % len(plans)])
