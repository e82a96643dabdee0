"""The ``.sdca`` expression namespace: methods on the label (or model) column."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from polars_sdca import functions

if TYPE_CHECKING:
    from collections.abc import Sequence

    from typing_extensions import Unpack

    from polars_sdca._typing import (
        CrfOptions,
        CrfPredictKind,
        CvOptions,
        FitOptions,
        GroupsKind,
        IntoExpr,
        IntoFeatures,
        PathOptions,
        PredictKind,
    )


@pl.api.register_expr_namespace("sdca")
class SdcaNamespace:
    """SDCA-family solvers on the expression they are called on.

    ``pl.col(y).sdca.fit(...)`` is :func:`polars_sdca.fit` with ``label=pl.col(y)``.
    """

    def __init__(self, expr: pl.Expr) -> None:
        self._expr = expr

    def fit(self, features: IntoFeatures, **options: Unpack[FitOptions]) -> pl.Expr:
        """Fit one model per group on this label column; see :func:`polars_sdca.fit`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_sdca  # noqa: F401
        >>> df = pl.DataFrame({"g": [1, 1, 2, 2], "x": [0.0, 1.0, 0.0, 1.0], "y": [0.0, 2.0, 0.0, 4.0]})
        >>> out = df.group_by("g", maintain_order=True).agg(
        ...     pl.col("y").sdca.fit(["x"], loss="squared", l2=1e-6, tol=1e-12).alias("m")
        ... )
        >>> [round(c, 3) for c in out["m"].struct.field("coef").list.first()]
        [2.0, 4.0]
        """
        return functions.fit(self._expr, features, **options)

    def fit_path(self, features: IntoFeatures, **options: Unpack[PathOptions]) -> pl.Expr:
        """One model per penalty value per group on this label column; see
        :func:`polars_sdca.fit_path`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_sdca  # noqa: F401
        >>> df = pl.DataFrame({"g": [1, 1, 1, 2, 2, 2], "x": [0.0, 1.0, 2.0] * 2})
        >>> df = df.with_columns(y=pl.col("x") * pl.col("g"))
        >>> out = df.group_by("g", maintain_order=True).agg(
        ...     pl.col("y").sdca.fit_path(["x"], loss="squared", l2=0.0, n_l1=4).alias("path")
        ... )
        >>> out["path"].list.len().to_list()
        [4, 4]
        """
        return functions.fit_path(self._expr, features, **options)

    def fit_cv(self, features: IntoFeatures, **options: Unpack[CvOptions]) -> pl.Expr:
        """A cross-validated path per group on this label column, refit at the chosen value;
        see :func:`polars_sdca.fit_cv`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_sdca  # noqa: F401
        >>> df = pl.DataFrame({"x": [float(i % 5) for i in range(30)]}).with_columns(y=2 * pl.col("x"))
        >>> cv = df.select(pl.col("y").sdca.fit_cv(["x"], loss="squared", l2=0.0, n_l1=4, folds=3)).item()
        >>> cv["scoring"], round(cv["model"]["coef"][0], 2)
        ('squared_error', 2.0)
        """
        return functions.fit_cv(self._expr, features, **options)

    def fit_groups(
        self,
        features: IntoFeatures,
        *,
        by: IntoExpr | Sequence[IntoExpr],
        kind: GroupsKind = "model",
        **options: Unpack[CvOptions],
    ) -> pl.Expr:
        """One model per group of ``by`` from one plugin call; see :func:`polars_sdca.fit_groups`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_sdca  # noqa: F401
        >>> df = pl.DataFrame({"g": [1, 1, 2, 2], "x": [0.0, 1.0, 0.0, 1.0], "y": [0.0, 2.0, 0.0, 4.0]})
        >>> out = df.select(pl.col("y").sdca.fit_groups(["x"], by="g", loss="squared", l2=1e-6, tol=1e-12))
        >>> [round(c, 3) for c in out.unnest("y")["y"].struct.field("coef").list.first()]
        [2.0, 4.0]
        """
        return functions.fit_groups(self._expr, features, by=by, kind=kind, **options)

    def fit_rows(self, features: IntoFeatures, **options: Unpack[FitOptions]) -> pl.Expr:
        """Per-row outputs of this group's fit; see :func:`polars_sdca.fit_rows`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_sdca  # noqa: F401
        >>> df = pl.DataFrame({"x": [-1.0, 1.0], "y": [-1, 1]})
        >>> out = df.select(pl.col("y").sdca.fit_rows(["x"], loss="hinge", l2=0.5)).unnest("y")
        >>> out["prediction"].to_list()
        [-1, 1]
        """
        return functions.fit_rows(self._expr, features, **options)

    def predict(self, features: IntoFeatures, *, kind: PredictKind = "decision") -> pl.Expr:
        """Predict with the model struct in this column; see :func:`polars_sdca.predict`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_sdca  # noqa: F401
        >>> df = pl.DataFrame({"x": [0.0, 1.0, 2.0], "y": [1.0, 3.0, 5.0]})
        >>> m = df.select(pl.col("y").sdca.fit(["x"], loss="squared", l2=1e-9, tol=1e-14).alias("m"))
        >>> df.join(m, how="cross").select(pl.col("m").sdca.predict(["x"]).round(3))["m"].to_list()
        [1.0, 3.0, 5.0]
        """
        return functions.predict(self._expr, features, kind=kind)

    def crf_fit(
        self,
        features: IntoFeatures,
        *,
        sequence: IntoExpr,
        order_by: IntoExpr | None = None,
        **options: Unpack[CrfOptions],
    ) -> pl.Expr:
        """Fit one linear-chain CRF per group on this tag column; see :func:`polars_sdca.crf_fit`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_sdca  # noqa: F401
        >>> df = pl.DataFrame({"s": [0, 0, 1], "x": [1.0, 0.0, 1.0], "t": ["A", "B", "A"]})
        >>> df.select(pl.col("t").sdca.crf_fit(["x"], sequence="s")).item()["labels"]
        ['A', 'B']
        """
        return functions.crf_fit(self._expr, features, sequence=sequence, order_by=order_by, **options)

    def crf_fit_rows(
        self,
        features: IntoFeatures,
        *,
        sequence: IntoExpr,
        order_by: IntoExpr | None = None,
        **options: Unpack[CrfOptions],
    ) -> pl.Expr:
        """Per-token outputs of this group's CRF; see :func:`polars_sdca.crf_fit_rows`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_sdca  # noqa: F401
        >>> df = pl.DataFrame({"s": [0, 0, 1], "x": [1.0, 0.0, 1.0], "t": ["A", "B", "A"]})
        >>> out = df.select(pl.col("t").sdca.crf_fit_rows(["x"], sequence="s", l2=0.1)).unnest("t")
        >>> out["prediction"].to_list()
        ['A', 'B', 'A']
        """
        return functions.crf_fit_rows(self._expr, features, sequence=sequence, order_by=order_by, **options)

    def crf_predict(
        self,
        features: IntoFeatures,
        *,
        sequence: IntoExpr,
        order_by: IntoExpr | None = None,
        n_features: int | None = None,
        kind: CrfPredictKind = "labels",
    ) -> pl.Expr:
        """Viterbi tags (or label marginals) with the CRF model in this column; see
        :func:`polars_sdca.crf_predict`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_sdca  # noqa: F401
        >>> df = pl.DataFrame({"s": [0, 0, 1], "x": [1.0, 0.0, 1.0], "t": ["A", "B", "A"]})
        >>> m = df.select(pl.col("t").sdca.crf_fit(["x"], sequence="s", l2=0.1).alias("m"))
        >>> df.join(m, how="cross").select(pl.col("m").sdca.crf_predict(["x"], sequence="s"))["m"].to_list()
        ['A', 'B', 'A']
        """
        return functions.crf_predict(
            self._expr, features, sequence=sequence, order_by=order_by, n_features=n_features, kind=kind
        )
