"""Problems and solvers of the benchmark cases.

Every solver is described by a :class:`Solver`: ``build(tol)`` returns the *timed*
callable, which starts from Polars columns and ends with a model (conversion included on
both sides: for scikit-learn, building the SciPy CSR matrix and the label array from the
Polars frame is inside the timed region; for polars-sdca and polars-ds, the whole
``select`` / ``group_by().agg`` is). ``coef(result)`` extracts coefficients *outside* the
timed region for scoring by :func:`common.primal_objective`.

Problems:

* :class:`SparseProblem`: one of the two sparse real data sets of :data:`SPARSE_DATA`, as
  CRFsuite-style sparse attributes with unit-norm rows and a label in {-1, +1}; optionally
  a seeded row subsample (``--quick``):

  - ``conll``: CoNLL-2003 English train tokens (``datasets.conll_token_features``),
    203,621 rows x 94,204 features, 2,415,370 non-zeros, label ``is_entity`` (+1 inside a
    named entity, 16.7% of the rows);
  - ``twt``: the Turkish Web Treebank, both sections (``datasets.turkish_token_features``),
    81,370 rows x 87,933 features, 650,960 non-zeros, label ``is_noun`` (+1 for the
    universal tag ``NOUN``, 41.6% of the rows).
* :class:`GroupProblem`: synthetic (seeded) per-group dense problems, ``rows`` rows x
  ``dense`` N(0, 1) features plus an explicit constant column ``one`` (the intercept,
  penalized like every coefficient, the same problem for both libraries).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import scipy.sparse
from common import FloatArray, Loss

import polars_sdca as ps
from polars_sdca import datasets

SDCA_MAX_EPOCHS = 100_000  # the tolerance, not the epoch cap, must stop every fit
SKLEARN_MAX_ITER = 1_000_000
PDS_MAX_ITER = 10_000


@dataclass
class Solver:
    """A solver of one case: how to build its timed call and read its coefficients."""

    name: str
    build: Callable[[float | None], Callable[[], Any]]
    coef: Callable[[Any], FloatArray]
    info: Callable[[Any], dict[str, Any]]
    tol_meaning: str


# --------------------------------------------------------------------------------------
# Sparse token data sets
# --------------------------------------------------------------------------------------


def _conll_frame() -> tuple[pl.DataFrame, int]:
    tokens = datasets.load_conll2003("train")
    feats, vocabulary = datasets.conll_token_features(tokens)
    return feats.select(pl.col("is_entity").alias("y"), "features"), len(vocabulary)


def _twt_frame() -> tuple[pl.DataFrame, int]:
    tokens = datasets.load_turkish_treebank("all")
    feats, vocabulary = datasets.turkish_token_features(tokens)
    return feats.select(pl.col("is_noun").alias("y"), "features"), len(vocabulary)


@dataclass(frozen=True)
class SparseData:
    """One sparse real data set: its loader, its label and the ``l2`` of its cases.

    ``l2`` is chosen per data set (see benchmarks/README.md, "Cases"); every objective of the
    issue-16 goals runs on every data set, with the goal's accuracy target.
    """

    key: str  # the prefix of its case ids and the name of its Parquet copy
    title: str
    label: str
    l2: float
    load: Callable[[], tuple[pl.DataFrame, int]]  # (frame with y and features, n_features)


SPARSE_DATA: dict[str, SparseData] = {
    d.key: d
    for d in (
        SparseData(
            "conll",
            "CoNLL-2003 train tokens",
            "is_entity: +1 inside a named entity",
            1e-4,
            _conll_frame,
        ),
        SparseData(
            "twt",
            "Turkish Web Treebank",
            "is_noun: +1 for the universal tag NOUN",
            # l2 n = 0.8 (CoNLL: 20): the harder regime of the two, and a held-out error of
            # logistic regression near the best (benchmarks/README.md, "Cases").
            1e-5,
            _twt_frame,
        ),
    )
}


@dataclass(frozen=True)
class SparseCase:
    """One objective on one sparse data set, with the issue-16 goal's accuracy target.

    ``l1 = l1_factor * l1_max`` with ``l1_max = ||X^T y||_inf / n`` (the smallest ``l1`` at
    which the lasso solution is zero; the smallest penalty of ``warm_path.py``'s path is
    ``1e-3 l1_max``). Regression losses use the label ``y`` in {-1, +1} as a real target.
    """

    id: str
    data: str  # a key of SPARSE_DATA
    loss: Loss
    l2: float
    target: float  # required (P - P*) / P*, the goal's
    l1_factor: float = 0.0
    smoothing: float = 1.0

    def l1(self, p: SparseProblem) -> float:
        """The elastic-net ``l1`` of this case on ``p`` (0 for pure l2 cases)."""
        if not self.l1_factor:
            return 0.0
        return self.l1_factor * float(np.abs(p.x.T @ p.y).max()) / p.n


# (id suffix, loss, target, l1_factor): the linear rows of issue 16's goals.
_OBJECTIVES: tuple[tuple[str, Loss, float, float], ...] = (
    ("logistic", "logistic", 1e-7, 0.0),
    ("hinge", "hinge", 1e-7, 0.0),
    ("squared", "squared", 1e-7, 0.0),
    ("smooth-hinge", "smooth_hinge", 1e-8, 0.0),
    ("elasticnet", "squared", 1e-8, 1e-3),
)
SPARSE_CASES: dict[str, SparseCase] = {
    f"{d.key}-{suffix}": SparseCase(f"{d.key}-{suffix}", d.key, loss, d.l2, target, l1_factor=l1_factor)
    for d in SPARSE_DATA.values()
    for suffix, loss, target, l1_factor in _OBJECTIVES
}
LIGHTNING_MAX_ITER = 100_000


def lightning_unavailable() -> str | None:
    """Why lightning (``sklearn-contrib-lightning``) cannot be imported, or None if it can.

    Its last release (0.6.2.post0, 2022) has no wheel for current CPython, and its sdist
    builds only with ``numpy.distutils`` and with Cython and ``wheel`` installed first
    (``pip install cython wheel`` then ``pip install --no-build-isolation
    sklearn-contrib-lightning``): not installable by a plain ``pip install`` of an extra.
    """
    try:
        import lightning.classification
        import lightning.regression  # noqa: F401
    except Exception as exc:  # ImportError, or a binary built against another numpy
        return (
            f"not installable by pip here ({type(exc).__name__}: {exc}); it needs "
            "`pip install cython wheel && pip install --no-build-isolation sklearn-contrib-lightning`"
        )
    return None


@dataclass
class SparseProblem:
    """The sparse binary token problem, as a Polars frame and as SciPy arrays for scoring."""

    df: pl.DataFrame  # y (Int64, -1/+1), features (List(Struct{index, value}))
    n_features: int
    x: scipy.sparse.csr_matrix  # for scoring only; never used by a timed call
    y: FloatArray

    @property
    def n(self) -> int:
        """Number of rows."""
        return self.df.height

    @property
    def nnz(self) -> int:
        """Number of stored non-zeros."""
        return int(self.x.nnz)

    def head(self, rows: int) -> SparseProblem:
        """The first ``rows`` rows (a tiny problem to warm a worker process up)."""
        df = self.df.head(rows)
        return SparseProblem(df, self.n_features, self.x[:rows], self.y[:rows])


def load_sparse(n_rows: int | None, seed: int, data: str = "conll") -> SparseProblem:
    """Load one of :data:`SPARSE_DATA` (all rows or a seeded subsample of ``n_rows``).

    The vocabulary (``n_features``) is always the one of the full data set, so the
    subsample keeps the full width, as a user fitting a slice of their data would.
    """
    df, n_features = SPARSE_DATA[data].load()
    if n_rows is not None and n_rows < df.height:
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.choice(df.height, size=n_rows, replace=False))
        df = df[idx]
    x = datasets.sparse_to_scipy(df, "features", n_features=n_features)
    y = df.get_column("y").to_numpy().astype(np.float64)
    return SparseProblem(df, n_features, x, y)


def write_sparse_cache(p: SparseProblem, path: Path) -> Path:
    """Write the sparse frame to ``path``; worker processes read it back for RSS runs.

    Reading Parquet leaves little garbage behind, so a worker's RSS before a fit is close
    to the data itself (building the attributes from text would leave the allocator with
    freed memory that the fit could then reuse unseen). Rewritten on every run, so it can
    never be stale.
    """
    tmp = path.with_suffix(".tmp")
    p.df.with_columns(pl.lit(p.n_features, dtype=pl.UInt32).alias("n_features")).write_parquet(tmp)
    tmp.rename(path)
    return path


def read_sparse_cache(path: Path) -> SparseProblem:
    """Read a frame written by :func:`write_sparse_cache` back into a :class:`SparseProblem`."""
    df = pl.read_parquet(path)
    n_features = int(df.get_column("n_features")[0])
    df = df.drop("n_features")
    x = datasets.sparse_to_scipy(df, "features", n_features=n_features)
    y = df.get_column("y").to_numpy().astype(np.float64)
    return SparseProblem(df, n_features, x, y)


def _sdca_model_info(model: dict[str, Any]) -> dict[str, Any]:
    return {
        "epochs": model["epochs"],
        "gap": model["gap"],
        "reported_primal": model["primal"],
        "converged": model["converged"],
        "status": model["status"],
    }


def sparse_solvers(
    p: SparseProblem,
    loss: Loss,
    l2: float,
    max_iter: int = SKLEARN_MAX_ITER,
    *,
    l1: float = 0.0,
    smoothing: float = 1.0,
) -> dict[str, Solver]:
    """polars-sdca and its peers at the same objective.

    Mappings to DESIGN.md section 3, ``(1/n) sum phi + (l2/2)||w||^2 + l1 ||w||_1``:

    * LogisticRegression / LinearSVC: ``C = 1/(l2 n)``.
    * ``Ridge`` minimizes ``||y - Xw||^2 + alpha ||w||^2``: ``alpha = l2 n`` (divide by 2n).
    * ``ElasticNet`` minimizes ``||y - Xw||^2 / (2n) + alpha l1_ratio ||w||_1 +
      alpha (1 - l1_ratio) ||w||^2 / 2``: ``alpha = l1 + l2``, ``l1_ratio = l1 / (l1 + l2)``.
    * lightning ``SDCAClassifier`` / ``SDCARegressor`` minimize ``(1/n) sum loss +
      alpha l1_ratio ||w||_1 + alpha (1 - l1_ratio) ||w||^2 / 2`` (its docstring and
      ``sdca_fast.pyx``; smooth hinge with ``gamma`` as Shalev-Shwartz & Zhang 2013 eq. 6, squared loss
      ``(a - y)^2 / 2``): the same ``alpha``, ``l1_ratio``, and ``gamma = smoothing``.

    ``max_iter`` caps the peers' iterations; it is large by default so that the tolerance,
    not the cap, stops them (a capped fit is reported by its warning).
    """
    from sklearn.linear_model import ElasticNet, LogisticRegression, Ridge
    from sklearn.svm import LinearSVC

    c = 1.0 / (l2 * p.n)
    # The label as a real target for the regression losses (-1.0 / +1.0).
    label = pl.col("y").cast(pl.Float64) if loss == "squared" else pl.col("y")

    def sdca(tol: float | None) -> Callable[[], pl.DataFrame]:
        expr = ps.fit(
            label,
            "features",
            loss=loss,
            l2=l2,
            l1=l1,
            smoothing=smoothing,
            tol=tol if tol is not None else 1e-6,
            fit_intercept=False,
            n_features=p.n_features,
            max_epochs=SDCA_MAX_EPOCHS,
        ).alias("model")
        return lambda: p.df.select(expr)

    def sdca_coef(out: pl.DataFrame) -> FloatArray:
        return out.get_column("model").struct.field("coef")[0].to_numpy().astype(np.float64)

    solvers = {
        "polars-sdca": Solver(
            "polars-sdca",
            sdca,
            sdca_coef,
            lambda out: _sdca_model_info(out.get_column("model")[0]),
            "relative duality gap",
        )
    }

    def sklearn(make: Callable[[float], Any]) -> Callable[[float | None], Callable[[], Any]]:
        def build(tol: float | None) -> Callable[[], Any]:
            def run() -> Any:
                x = datasets.sparse_to_scipy(p.df, "features", n_features=p.n_features)
                y = p.df.get_column("y").to_numpy()
                if loss == "squared":
                    y = y.astype(np.float64)
                return make(tol if tol is not None else 1e-4).fit(x, y)

            return run

        return build

    def est_coef(est: Any) -> FloatArray:
        return np.asarray(est.coef_, dtype=np.float64).ravel()

    def est_info(est: Any) -> dict[str, Any]:
        n_iter = getattr(est, "n_iter_", None)
        return {} if n_iter is None else {"iterations": int(np.max(n_iter))}

    def lightning_info(est: Any) -> dict[str, Any]:
        return {}

    if loss == "logistic":
        solvers["liblinear"] = Solver(
            "liblinear (LogisticRegression)",
            sklearn(
                lambda tol: LogisticRegression(
                    solver="liblinear", C=c, fit_intercept=False, tol=tol, max_iter=max_iter
                )
            ),
            est_coef,
            est_info,
            "liblinear trust-region Newton eps (gradient norm, relative)",
        )
        solvers["lbfgs"] = Solver(
            "sklearn lbfgs (LogisticRegression)",
            sklearn(
                lambda tol: LogisticRegression(
                    solver="lbfgs", C=c, fit_intercept=False, tol=tol, max_iter=max_iter
                )
            ),
            est_coef,
            est_info,
            "scipy L-BFGS-B gtol (max abs projected gradient)",
        )
    elif loss == "hinge":
        solvers["liblinear"] = Solver(
            "liblinear dual CD (LinearSVC)",
            sklearn(
                lambda tol: LinearSVC(
                    loss="hinge", dual=True, C=c, fit_intercept=False, tol=tol, max_iter=max_iter
                )
            ),
            est_coef,
            est_info,
            "liblinear dual CD eps (projected-gradient spread)",
        )
    elif loss == "squared" and not l1:
        for solver in ("sparse_cg", "lsqr"):
            solvers[solver] = Solver(
                f"sklearn Ridge ({solver})",
                sklearn(
                    lambda tol, solver=solver: Ridge(
                        alpha=l2 * p.n, solver=solver, fit_intercept=False, tol=tol, max_iter=max_iter
                    )
                ),
                est_coef,
                est_info,
                "conjugate gradient residual (rtol)" if solver == "sparse_cg" else "LSQR atol = btol",
            )
    elif loss == "squared":
        solvers["cd"] = Solver(
            "sklearn ElasticNet (coordinate descent)",
            sklearn(
                lambda tol: ElasticNet(
                    alpha=l1 + l2,
                    l1_ratio=l1 / (l1 + l2),
                    fit_intercept=False,
                    tol=tol,
                    max_iter=max_iter,
                )
            ),
            est_coef,
            est_info,
            "duality gap <= tol * ||y||^2 / n",
        )
    if lightning_unavailable() is None and (loss == "smooth_hinge" or (loss == "squared" and l1)):
        from lightning.classification import SDCAClassifier
        from lightning.regression import SDCARegressor

        def make_lightning(tol: float) -> Any:
            est = SDCAClassifier if loss == "smooth_hinge" else SDCARegressor
            kwargs = {"gamma": smoothing} if loss == "smooth_hinge" else {}
            return est(
                alpha=l1 + l2,
                l1_ratio=l1 / (l1 + l2),
                loss=loss,
                tol=tol,
                max_iter=min(max_iter, LIGHTNING_MAX_ITER),
                random_state=0,
                **kwargs,
            )

        solvers["lightning"] = Solver(
            "lightning (prox-)SDCA",
            sklearn(make_lightning),
            est_coef,
            lightning_info,
            "absolute duality-gap estimate (loss summed during the epoch)",
        )
    return solvers


# --------------------------------------------------------------------------------------
# Many small dense groups
# --------------------------------------------------------------------------------------


@dataclass
class GroupProblem:
    """``groups`` independent dense problems of ``rows`` rows, stacked in one frame."""

    df: pl.DataFrame  # g, x0..x{dense-1}, one, y01 (logistic), yr (ridge target)
    x: FloatArray  # (groups, rows, d), for scoring only
    y01: FloatArray  # (groups, rows)
    yr: FloatArray  # (groups, rows)
    features: list[str]

    @property
    def groups(self) -> int:
        """Number of groups."""
        return self.x.shape[0]

    @property
    def rows(self) -> int:
        """Rows per group."""
        return self.x.shape[1]

    @property
    def d(self) -> int:
        """Columns of the design, the constant column included."""
        return self.x.shape[2]

    def head(self, groups: int) -> GroupProblem:
        """The first ``groups`` groups (a tiny problem to warm a worker process up)."""
        df = self.df.filter(pl.col("g") < groups)
        return GroupProblem(df, self.x[:groups], self.y01[:groups], self.yr[:groups], self.features)


def make_groups(groups: int, rows: int, dense: int, seed: int) -> GroupProblem:
    """Draw the synthetic per-group problems (seeded; rows sorted by group).

    Per group: features ``x ~ N(0, 1)``, true weights ``w ~ N(0, 1)``, true intercept
    ``b ~ N(0, 0.5^2)``, margin ``m = x.w + b``; ``y01 ~ Bernoulli(sigmoid(m))`` for the
    logistic case and ``yr = m + N(0, 0.5^2)`` for ridge. Labels are drawn, not
    thresholded, so groups are (almost always) not separable.
    """
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((groups, rows, dense))
    w = rng.standard_normal((groups, dense))
    b = 0.5 * rng.standard_normal(groups)
    margin = np.einsum("grd,gd->gr", xs, w) + b[:, None]
    y01 = (rng.random((groups, rows)) < 1.0 / (1.0 + np.exp(-margin))).astype(np.float64)
    yr = margin + 0.5 * rng.standard_normal((groups, rows))
    x = np.concatenate([xs, np.ones((groups, rows, 1))], axis=2)
    names = [f"x{j}" for j in range(dense)] + ["one"]
    columns: dict[str, Any] = {"g": np.repeat(np.arange(groups, dtype=np.int64), rows)}
    columns |= {name: np.ascontiguousarray(x[:, :, j]).ravel() for j, name in enumerate(names)}
    columns["y01"] = y01.ravel().astype(np.int64)
    columns["yr"] = yr.ravel()
    return GroupProblem(pl.DataFrame(columns), x, y01, yr, names)


def _stack(lists: pl.Series, d: int) -> FloatArray:
    """Turn a List(Float64) Series of per-group coefficients into a (groups, d) array."""
    return lists.list.to_array(d).to_numpy().astype(np.float64)


def group_solvers(p: GroupProblem, loss: Loss, l2: float) -> dict[str, Solver]:
    """polars-sdca and polars-ds in the same ``group_by("g").agg``, same objective.

    Objective mapping (read from polars-ds 0.13's Rust source, and checked numerically by
    the per-group objective comparison the harness reports):

    * ``pds.logistic_reg`` minimizes ``(1/n) sum log-loss + (l2_reg/2) ||w||^2`` over the
      non-bias coefficients (L-BFGS, stops when the gradient norm < max(tol, 1.5e-8)):
      our objective with ``l2_reg = l2``. Labels must be 0/1 (ours accepts 0/1 too).
    * ``pds.lin_reg(l2_reg=...)`` solves ``(X^T X + l2_reg I) w = X^T y``, the minimizer
      of ``(1/2)||Xw - y||^2 + (l2_reg/2)||w||^2``; dividing by n gives our squared-loss
      objective with ``l2 = l2_reg / n``, so ``l2_reg = l2 * rows`` (all groups have
      ``rows`` rows).
    * polars-ds does not penalize its own bias (``add_bias=True``) while polars-sdca
      penalizes its intercept (a constant feature). Both are therefore run with no
      intercept option and the explicit constant column ``one``: the same problem.
    """
    import polars_ds as pds

    label = "y01" if loss == "logistic" else "yr"
    d = p.d

    def sdca(tol: float | None) -> Callable[[], pl.DataFrame]:
        expr = (
            pl.col(label)
            .sdca.fit(
                p.features,
                loss=loss,
                l2=l2,
                tol=tol if tol is not None else 1e-6,
                fit_intercept=False,
                max_epochs=SDCA_MAX_EPOCHS,
            )
            .alias("model")
        )
        return lambda: p.df.group_by("g").agg(expr)

    def sdca_coef(out: pl.DataFrame) -> FloatArray:
        return _stack(out.sort("g").get_column("model").struct.field("coef"), d)

    def sdca_info(out: pl.DataFrame) -> dict[str, Any]:
        m = out.get_column("model").struct.unnest()
        return {
            "epochs_mean": float(m["epochs"].mean()),  # type: ignore[arg-type]
            "epochs_max": int(m["epochs"].max()),  # type: ignore[arg-type]
            "converged_fraction": float(m["converged"].mean()),  # type: ignore[arg-type]
            "max_relative_gap": float((m["gap"] / m["primal"]).max()),  # type: ignore[arg-type]
        }

    def sdca_batch(tol: float | None) -> Callable[[], pl.DataFrame]:
        from polars_sdca import fit_groups

        expr = fit_groups(
            label,
            p.features,
            by="g",
            loss=loss,
            l2=l2,
            tol=tol if tol is not None else 1e-6,
            fit_intercept=False,
            max_epochs=SDCA_MAX_EPOCHS,
        )
        return lambda: p.df.select(expr).unnest(label).rename({label: "model"})

    solvers = {
        "polars-sdca": Solver("polars-sdca", sdca, sdca_coef, sdca_info, "relative duality gap"),
        # The same fits from one plugin call (no per-group Arrow import / export).
        "polars-sdca-fit-groups": Solver(
            "polars-sdca fit_groups", sdca_batch, sdca_coef, sdca_info, "relative duality gap"
        ),
    }
    if loss == "logistic":

        def pds_build(tol: float | None) -> Callable[[], pl.DataFrame]:
            expr = pds.logistic_reg(
                *p.features,
                target=label,
                add_bias=False,
                l2_reg=l2,
                tol=tol if tol is not None else 1e-5,
                max_iter=PDS_MAX_ITER,
            ).alias("coef")
            return lambda: p.df.group_by("g").agg(expr)

        def pds_coef(out: pl.DataFrame) -> FloatArray:
            # logistic_reg is not declared scalar: agg wraps its one-row output in a list.
            return _stack(out.sort("g").get_column("coef").list.first(), d)

        solvers["polars-ds"] = Solver(
            "polars-ds logistic_reg",
            pds_build,
            pds_coef,
            lambda out: {},
            "L-BFGS gradient norm (floored at 1.5e-8)",
        )
    elif loss == "squared":

        def pds_ridge(tol: float | None) -> Callable[[], pl.DataFrame]:
            expr = pds.lin_reg(*p.features, target=label, add_bias=False, l2_reg=l2 * p.rows).alias("coef")
            return lambda: p.df.group_by("g").agg(expr)

        solvers["polars-ds"] = Solver(
            "polars-ds lin_reg (ridge)",
            pds_ridge,
            lambda out: _stack(out.sort("g").get_column("coef"), d),
            lambda out: {},
            "none (direct solve of the normal equations)",
        )
    return solvers


def ridge_closed_form(p: GroupProblem, l2: float) -> FloatArray:
    """Per-group exact ridge minimizer of the DESIGN objective: (X^T X + l2 n I) w = X^T y."""
    xtx = np.einsum("grd,gre->gde", p.x, p.x) + l2 * p.rows * np.eye(p.d)
    xty = np.einsum("grd,gr->gd", p.x, p.yr)
    return np.linalg.solve(xtx, xty[..., None])[..., 0]
