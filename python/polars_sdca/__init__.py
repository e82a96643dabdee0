"""polars-sdca: stochastic dual coordinate ascent solvers inside Polars query plans.

Importing the package registers the ``.sdca`` expression namespace::

    import polars as pl
    import polars_sdca

    models = df.group_by("store").agg(
        pl.col("clicked").sdca.fit("features", loss="logistic", l2=1e-4).alias("model")
    )
"""

from __future__ import annotations

from polars_sdca import namespace as _namespace  # noqa: F401  (registers `.sdca`)
from polars_sdca._internal import __version__
from polars_sdca.functions import (
    crf_fit,
    crf_fit_rows,
    crf_predict,
    fit,
    fit_cv,
    fit_groups,
    fit_path,
    fit_rows,
    predict,
)

__all__ = [
    "__version__",
    "crf_fit",
    "crf_fit_rows",
    "crf_predict",
    "fit",
    "fit_cv",
    "fit_groups",
    "fit_path",
    "fit_rows",
    "predict",
]
