"""Certified reference optima for the objectives of DESIGN.md section 3.

The test suite compares the product's solvers against the values computed here, so every value
returned by this module is *certified*: it comes with a feasible dual point whose value is a lower
bound on the optimum, and the duality gap ``P(w) - D(alpha)`` is checked before the value is handed
out (DATA.md: "Certify every reference by its own duality gap before trusting it").

Objective (no intercept; ``X`` is ``n x d`` dense or sparse, ``s`` optional sample weights)::

    P(w) = (1/n) * sum_i s_i * phi(x_i . w, y_i) + (l2/2) * ||w||^2 + l1 * ||w||_1

Dual (``l1 = 0``, ``l2 > 0``), with ``w(alpha) = (1/(l2 n)) * sum_i s_i alpha_i x_i``::

    D(alpha) = (1/n) * sum_i s_i * (-phi*(-alpha_i)) - (l2/2) * ||w(alpha)||^2

Weak duality ``D(alpha) <= P(w*) <= P(w)`` holds for *every* feasible ``alpha`` and *every* ``w``,
so a small computed gap proves that ``w`` is near-optimal whatever algorithm produced it, and by
``l2``-strong convexity ``||w - w*|| <= sqrt(2 * gap / l2)``.

Losses ``phi(a, y)`` and ``-phi*(-alpha)`` (``m = y a`` and ``b = y alpha`` for the margin
losses, whose labels are -1/+1):

=====================  ==================================  ========================================
loss                   phi                                 -phi*(-alpha) on its domain
=====================  ==================================  ========================================
hinge                  max(0, 1 - m)                       b, b in [0, 1]
smooth_hinge (gamma)   0 / 1 - m - gamma/2 / (1-m)^2/2g    b - (gamma/2) b^2, b in [0, 1]
squared_hinge          max(0, 1 - m)^2                     b - b^2/4, b >= 0
logistic               log(1 + exp(-m))                    -(b ln b + (1-b) ln(1-b)), b in [0, 1]
squared                (a - y)^2 / 2                       alpha y - alpha^2/2
absolute               |a - y|                             alpha y, |alpha| <= 1
epsilon_insensitive    max(0, |a - y| - epsilon)           alpha y - epsilon |alpha|, |alpha| <= 1
quantile (tau)         tau (y-a)_+ + (1-tau) (a-y)_+       alpha y, alpha in [tau - 1, tau]
=====================  ==================================  ========================================

Public functions: :func:`loss_value`, :func:`neg_conjugate`, :func:`primal`, :func:`dual`,
:func:`dual_weights`, :func:`block_gaps`, :func:`reference_optimum`, :func:`lp_optimum_l1`, and two
data helpers, :func:`breast_cancer_pm1` and :func:`make_sparse_problem`.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy import linalg, optimize, special
from scipy.sparse.linalg import LinearOperator, cg, minres
from threadpoolctl import threadpool_limits

__all__ = [
    "LOSSES",
    "CertificationError",
    "LPReference",
    "Reference",
    "block_gaps",
    "breast_cancer_pm1",
    "dual",
    "dual_weights",
    "loss_value",
    "lp_optimum_l1",
    "make_sparse_problem",
    "neg_conjugate",
    "primal",
    "reference_optimum",
]

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.intp]
MatrixLike: TypeAlias = "npt.ArrayLike | sp.spmatrix | sp.sparray"
Matrix: TypeAlias = "FloatArray | sp.csr_matrix"

#: Every loss this module knows. ``quantile`` is not a product loss (DESIGN section 3); it is here
#: for :func:`lp_optimum_l1` and for cross-checks against ``sklearn.linear_model.QuantileRegressor``.
LOSSES: tuple[str, ...] = (
    "hinge",
    "smooth_hinge",
    "squared_hinge",
    "logistic",
    "squared",
    "absolute",
    "epsilon_insensitive",
    "quantile",
)
_MARGIN_LOSSES = frozenset({"hinge", "smooth_hinge", "squared_hinge", "logistic"})
_LP_LOSSES = frozenset({"hinge", "absolute", "epsilon_insensitive", "quantile"})

# Loss -> {parameter: default}. Pass parameters explicitly when comparing with the product, whose
# defaults are defined by DESIGN.md / the Rust config, not here.
_PARAM_DEFAULTS: dict[str, dict[str, float]] = {
    "smooth_hinge": {"smoothing": 1.0},
    "epsilon_insensitive": {"epsilon": 0.1},
    "quantile": {"tau": 0.5},
}
_PARAM_ALIASES = {"gamma": "smoothing"}

# Sizes above which dense linear algebra is replaced by Krylov methods (face-Newton steps; normal
# equations of ridge and logistic Newton).
_DENSE_FACE_LIMIT = 2500
_DENSE_FEATURE_LIMIT = 4000


# --------------------------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------------------------


def _as_matrix(X: MatrixLike) -> Matrix:
    """Return ``X`` as C-contiguous float64 ndarray or canonical float64 CSR."""
    if sp.issparse(X):
        M = sp.csr_matrix(X, dtype=np.float64)  # copies only when needed
        if not M.has_canonical_format:
            M = M.copy()
            M.sum_duplicates()
        if not np.all(np.isfinite(M.data)):
            raise ValueError("X contains NaN or inf")
        return M
    A = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
    if A.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError("X contains NaN or inf")
    return A


def _as_vector(v: npt.ArrayLike, n: int, name: str) -> FloatArray:
    a = np.asarray(v, dtype=np.float64).ravel()
    if a.shape != (n,):
        raise ValueError(f"{name} must have length {n}, got shape {np.shape(v)}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or inf")
    return a


def _weights(s: npt.ArrayLike | None, n: int) -> FloatArray:
    if s is None:
        return np.ones(n)
    a = _as_vector(s, n, "s")
    if np.any(a < 0):
        raise ValueError("sample weights s must be >= 0")
    return a


def _check_loss(loss: str) -> None:
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; expected one of {', '.join(LOSSES)}")


def _params(loss: str, params: dict[str, Any]) -> dict[str, float]:
    """Validate the loss parameters and fill in the defaults."""
    _check_loss(loss)
    given = {_PARAM_ALIASES.get(k, k): float(v) for k, v in params.items()}
    if len(given) != len(params):
        raise TypeError(f"{loss}: pass either 'gamma' or 'smoothing', not both")
    allowed = _PARAM_DEFAULTS.get(loss, {})
    unknown = set(given) - set(allowed)
    if unknown:
        raise TypeError(f"{loss}: unexpected parameter(s) {sorted(unknown)}; allowed {sorted(allowed)}")
    out = {**allowed, **given}
    if loss == "smooth_hinge" and not out["smoothing"] > 0:
        raise ValueError("smooth_hinge: smoothing must be > 0")
    if loss == "epsilon_insensitive" and not out["epsilon"] >= 0:
        raise ValueError("epsilon_insensitive: epsilon must be >= 0")
    if loss == "quantile" and not 0 < out["tau"] < 1:
        raise ValueError("quantile: tau must be in (0, 1)")
    return out


def _check_labels(loss: str, y: FloatArray) -> None:
    if loss in _MARGIN_LOSSES and not np.all(np.abs(y) == 1.0):
        raise ValueError(f"{loss}: labels must be -1 or +1")


def _matvec(X: Matrix, w: FloatArray) -> FloatArray:
    return np.asarray(X @ w, dtype=np.float64).ravel()


def _rmatvec(X: Matrix, v: FloatArray) -> FloatArray:
    return np.asarray(X.T @ v, dtype=np.float64).ravel()


def _row_sq_norms(X: Matrix) -> FloatArray:
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    return np.einsum("ij,ij->i", X, X)


# --------------------------------------------------------------------------------------------
# Losses, conjugates, objectives
# --------------------------------------------------------------------------------------------


def loss_value(z: npt.ArrayLike, y: npt.ArrayLike, loss: str, **params: float) -> FloatArray:
    """Per-row loss ``phi(z_i, y_i)``.

    Parameters
    ----------
    z : array_like
        Decision values ``x_i . w``.
    y : array_like
        Labels (-1/+1 for margin losses) or targets.
    loss : str
        One of :data:`LOSSES`.
    **params : float
        ``smoothing`` (alias ``gamma``), ``epsilon`` or ``tau``, depending on the loss.

    Returns
    -------
    numpy.ndarray
        ``phi(z_i, y_i)`` for every row, computed in a numerically stable form.
    """
    p = _params(loss, params)
    z = np.asarray(z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    m = y * z
    r = z - y
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - m)
    if loss == "smooth_hinge":
        g = p["smoothing"]
        return np.where(
            m >= 1.0,
            0.0,
            np.where(m <= 1.0 - g, 1.0 - m - g / 2.0, (1.0 - m) ** 2 / (2.0 * g)),
        )
    if loss == "squared_hinge":
        return np.maximum(0.0, 1.0 - m) ** 2
    if loss == "logistic":
        return np.logaddexp(0.0, -m)
    if loss == "squared":
        return 0.5 * r**2
    if loss == "absolute":
        return np.abs(r)
    if loss == "epsilon_insensitive":
        return np.maximum(0.0, np.abs(r) - p["epsilon"])
    tau = p["tau"]
    return tau * np.maximum(-r, 0.0) + (1.0 - tau) * np.maximum(r, 0.0)


def _dual_domain(loss: str, p: dict[str, float]) -> tuple[float, float]:
    """Box of the dual variable: ``b = y alpha`` (margin losses) or ``alpha`` (regression)."""
    if loss in ("hinge", "smooth_hinge", "logistic"):
        return 0.0, 1.0
    if loss == "squared_hinge":
        return 0.0, math.inf
    if loss == "squared":
        return -math.inf, math.inf
    if loss == "quantile":
        return p["tau"] - 1.0, p["tau"]
    return -1.0, 1.0


def neg_conjugate(
    alpha: npt.ArrayLike,
    y: npt.ArrayLike,
    loss: str,
    *,
    atol: float = 0.0,
    **params: float,
) -> FloatArray:
    """Per-row ``-phi*(-alpha_i)``, ``-inf`` where ``alpha_i`` is outside the loss's domain.

    Parameters
    ----------
    alpha : array_like
        Dual variables in the convention of DESIGN section 3 (``y_i alpha_i`` is the boxed quantity
        for margin losses).
    y : array_like
        Labels or targets.
    loss : str
        One of :data:`LOSSES`.
    atol : float, default 0
        Values outside the domain by at most ``atol`` are projected onto it first (for duals
        produced by other code that rounds, e.g. ``1 + 1e-16``). The default is exact.
    **params : float
        Loss parameters.

    Returns
    -------
    numpy.ndarray
        ``-phi*(-alpha_i)``; ``-inf`` on infeasible rows.
    """
    p = _params(loss, params)
    a = np.asarray(alpha, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    margin = loss in _MARGIN_LOSSES
    v = a * y if margin else a.copy()  # the boxed variable
    lo, hi = _dual_domain(loss, p)
    if atol > 0:
        v = np.where((v < lo) & (v >= lo - atol), lo, v)
        v = np.where((v > hi) & (v <= hi + atol), hi, v)
    feasible = (v >= lo) & (v <= hi) & np.isfinite(v)
    vc = np.clip(v, lo, hi)
    vc = np.where(np.isfinite(vc), vc, 0.0)
    if loss == "hinge":
        out = vc
    elif loss == "smooth_hinge":
        out = vc - 0.5 * p["smoothing"] * vc**2
    elif loss == "squared_hinge":
        out = vc - vc**2 / 4.0
    elif loss == "logistic":
        out = -(special.xlogy(vc, vc) + special.xlogy(1.0 - vc, 1.0 - vc))
    elif loss == "squared":
        out = vc * y - 0.5 * vc**2
    elif loss == "epsilon_insensitive":
        out = vc * y - p["epsilon"] * np.abs(vc)
    else:  # absolute, quantile
        out = vc * y
    return np.where(feasible, out, -np.inf)


def primal(
    X: MatrixLike,
    y: npt.ArrayLike,
    w: npt.ArrayLike,
    loss: str,
    l2: float,
    s: npt.ArrayLike | None = None,
    *,
    l1: float = 0.0,
    **loss_params: float,
) -> float:
    """Primal objective ``P(w) = (1/n) sum_i s_i phi(x_i.w, y_i) + (l2/2)||w||^2 + l1 ||w||_1``.

    Parameters
    ----------
    X : array_like or scipy.sparse matrix, shape (n, d)
        Features.
    y : array_like, shape (n,)
        Labels (-1/+1 for margin losses) or targets.
    w : array_like, shape (d,)
        Weights.
    loss : str
        One of :data:`LOSSES`.
    l2, l1 : float
        Regularization strengths (``l2`` is lambda of the papers).
    s : array_like, optional
        Sample weights (default 1).
    **loss_params : float
        Loss parameters (``smoothing``, ``epsilon``, ``tau``).

    Returns
    -------
    float
        ``P(w)``.
    """
    Xm = _as_matrix(X)
    n, d = Xm.shape
    yv = _as_vector(y, n, "y")
    wv = _as_vector(w, d, "w")
    sv = _weights(s, n)
    z = _matvec(Xm, wv)
    phi = loss_value(z, yv, loss, **loss_params)
    return float(np.dot(sv, phi) / n + 0.5 * l2 * np.dot(wv, wv) + l1 * np.abs(wv).sum())


def dual_weights(
    X: MatrixLike, alpha: npt.ArrayLike, l2: float, s: npt.ArrayLike | None = None
) -> FloatArray:
    """Primal point of a dual point: ``w(alpha) = (1/(l2 n)) sum_i s_i alpha_i x_i``.

    Parameters
    ----------
    X : array_like or scipy.sparse matrix, shape (n, d)
    alpha : array_like, shape (n,)
    l2 : float
        Must be > 0.
    s : array_like, optional
        Sample weights.

    Returns
    -------
    numpy.ndarray, shape (d,)
    """
    if not l2 > 0:
        raise ValueError("l2 must be > 0 for the dual")
    Xm = _as_matrix(X)
    n = Xm.shape[0]
    return _rmatvec(Xm, _weights(s, n) * _as_vector(alpha, n, "alpha")) / (l2 * n)


def dual(
    X: MatrixLike,
    y: npt.ArrayLike,
    alpha: npt.ArrayLike,
    loss: str,
    l2: float,
    s: npt.ArrayLike | None = None,
    *,
    atol: float = 0.0,
    **params: float,
) -> float:
    """Dual objective ``D(alpha) = (1/n) sum_i s_i (-phi*(-alpha_i)) - (l2/2)||w(alpha)||^2``.

    Any feasible ``alpha`` gives a lower bound on ``min_w P(w)`` (weak duality).

    Parameters
    ----------
    X, y, loss, l2, s
        As in :func:`primal` (``l2 > 0``, no ``l1``).
    alpha : array_like, shape (n,)
        Dual variables (DESIGN section 3 convention).
    atol : float, default 0
        Feasibility slack, see :func:`neg_conjugate`.
    **params : float
        Loss parameters.

    Returns
    -------
    float
        ``D(alpha)``, or ``-inf`` if some ``alpha_i`` (with any weight) is infeasible.
    """
    Xm = _as_matrix(X)
    n = Xm.shape[0]
    yv = _as_vector(y, n, "y")
    av = np.asarray(alpha, dtype=np.float64).ravel()
    if av.shape != (n,):
        raise ValueError(f"alpha must have length {n}")
    sv = _weights(s, n)
    c = neg_conjugate(av, yv, loss, atol=atol, **params)
    if not np.all(np.isfinite(c)):
        return -math.inf
    if atol > 0:  # the projected alpha (feasible, within atol of the given one) defines w too
        lo, hi = _dual_domain(loss, _params(loss, params))
        sign = yv if loss in _MARGIN_LOSSES else np.ones(n)
        av = np.clip(av * sign, lo, hi) * sign
    w = dual_weights(Xm, av, l2, sv)
    return float(np.dot(sv, c) / n - 0.5 * l2 * np.dot(w, w))


def block_gaps(
    X: MatrixLike,
    y: npt.ArrayLike,
    w: npt.ArrayLike,
    alpha: npt.ArrayLike,
    loss: str,
    **params: float,
) -> FloatArray:
    """Per-row Fenchel-Young gaps ``phi(z_i) + phi*(-alpha_i) + alpha_i z_i`` with ``z = X w``.

    Each entry is ``>= 0`` for feasible ``alpha_i`` (``+inf`` if infeasible); with
    ``w = w(alpha)`` their ``s``-weighted mean equals ``P(w) - D(alpha)`` (DESIGN section 3).

    Parameters
    ----------
    X, y, w, loss
        As in :func:`primal`.
    alpha : array_like, shape (n,)
        Dual variables.
    **params : float
        Loss parameters.

    Returns
    -------
    numpy.ndarray, shape (n,)
    """
    Xm = _as_matrix(X)
    n, d = Xm.shape
    yv = _as_vector(y, n, "y")
    z = _matvec(Xm, _as_vector(w, d, "w"))
    a = np.asarray(alpha, dtype=np.float64).ravel()
    return loss_value(z, yv, loss, **params) - neg_conjugate(a, yv, loss, **params) + a * z


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """A certified optimum of ``P`` (``l2 > 0``, ``l1 = 0``).

    Attributes
    ----------
    w : numpy.ndarray
        The primal point.
    primal : float
        ``P(w)``, recomputed by :func:`primal`.
    lower_bound : float
        ``D(alpha)`` at the certificate ``alpha``, recomputed by :func:`dual`.
    gap : float
        ``primal - lower_bound >= P(w) - P(w*)``.
    method : str
        How the point was produced and certified.
    alpha : numpy.ndarray
        The feasible dual point that certifies ``lower_bound``.
    certified : bool
        ``gap <= rtol * max(1, primal)`` (always true unless ``strict=False`` was passed).
    seconds : float
        Wall time spent.
    """

    w: FloatArray
    primal: float
    lower_bound: float
    gap: float
    method: str
    alpha: FloatArray
    certified: bool
    seconds: float

    def distance_bound(self, l2: float) -> float:
        """Certified bound on ``||w - w*||``: ``sqrt(2 * gap / l2)`` (``l2``-strong convexity).

        The gap is floored at ``4 eps max(1, |P|)``, the rounding error of evaluating ``P`` and
        ``D``, so a gap computed as 0 or slightly negative still gives an honest radius.
        """
        floor = 4.0 * float(np.finfo(np.float64).eps) * max(1.0, abs(self.primal))
        return math.sqrt(2.0 * max(self.gap, floor) / l2)


@dataclass(frozen=True)
class LPReference:
    """An exact optimum of an L1-penalized piecewise-linear problem (see :func:`lp_optimum_l1`).

    Attributes
    ----------
    w : numpy.ndarray
        Optimal weights (a vertex of the LP).
    value : float
        ``P(w)`` recomputed by :func:`primal` with ``l2 = 0``.
    lower_bound : float
        Value of a feasible point of the problem's dual, built from the LP multipliers.
    gap : float
        ``value - lower_bound``.
    lp_value : float
        The objective reported by HiGHS.
    method : str
        Solver description.
    """

    w: FloatArray
    value: float
    lower_bound: float
    gap: float
    lp_value: float
    method: str


class CertificationError(RuntimeError):
    """The reference could not be certified to the requested relative gap."""


# --------------------------------------------------------------------------------------------
# The problem object and the quadratic-dual machinery
# --------------------------------------------------------------------------------------------


@dataclass
class _RowClass:
    """Rows with pairwise disjoint supports: their exact coordinate steps commute."""

    rows: IntArray
    indices: IntArray
    data: FloatArray
    rid: IntArray  # local row id of every stored entry


class _Problem:
    """Data of one fit: ``X``, ``y``, ``s``, ``l2`` and cached derived quantities."""

    def __init__(
        self,
        X: MatrixLike,
        y: npt.ArrayLike,
        loss: str,
        l2: float,
        s: npt.ArrayLike | None,
        seed: int,
    ) -> None:
        if not (math.isfinite(float(l2)) and float(l2) > 0):
            raise ValueError(f"l2 must be a finite number > 0, got {l2!r}")
        self.X = _as_matrix(X)
        self.n, self.d = self.X.shape
        if self.n == 0:
            raise ValueError("X has no rows")
        self.y = _as_vector(y, self.n, "y")
        _check_labels(loss, self.y)
        self.s = _weights(s, self.n)
        self.l2 = float(l2)
        self.sparse = sp.issparse(self.X)
        self.sqnorm = _row_sq_norms(self.X)
        self.seed = seed
        self._classes: list[_RowClass] | None = None

    @property
    def scale(self) -> float:
        """``l2 * n``: ``w(alpha) = X^T (s alpha) / scale``."""
        return self.l2 * self.n

    def w_of(self, alpha: FloatArray) -> FloatArray:
        return _rmatvec(self.X, self.s * alpha) / self.scale

    def classes(self) -> list[_RowClass]:
        if self._classes is None:
            assert sp.issparse(self.X)
            self._classes = _independent_row_classes(self.X, self.seed)
        return self._classes


def _independent_row_classes(X: sp.csr_matrix, seed: int) -> list[_RowClass]:
    """Partition the rows of a CSR matrix into classes of rows with pairwise disjoint supports.

    Exact dual coordinate steps on rows that share no column do not interact, so updating a whole
    class at once with numpy is *the same* as a sequential sweep over it. Each round gives every
    remaining row a random colour out of ``k`` (about three times the mean conflict degree) and
    keeps a row unless an earlier row of its colour uses one of its columns; the rest go to the
    next round. The first remaining row is always kept, so this terminates.
    """
    rng = np.random.default_rng(seed)
    n, d = X.shape
    remaining = np.arange(n)
    out: list[_RowClass] = []
    while remaining.size:
        sub = X[remaining]
        counts = np.diff(sub.indptr)
        rid = np.repeat(np.arange(remaining.size), counts)
        colcount = np.bincount(sub.indices, minlength=d)
        degree = np.bincount(rid, weights=colcount[sub.indices] - 1.0, minlength=remaining.size)
        k = int(min(remaining.size, max(1.0, math.ceil(3.0 * degree.mean()) + 1)))
        colour = rng.integers(k, size=remaining.size)
        keys = colour[rid].astype(np.int64) * d + sub.indices
        order = np.argsort(keys, kind="stable")
        sk = keys[order]
        dup = order[1:][sk[1:] == sk[:-1]]
        bad = np.zeros(remaining.size, dtype=bool)
        bad[rid[dup]] = True
        good = np.flatnonzero(~bad)
        good = good[np.argsort(colour[good], kind="stable")]
        splits = np.flatnonzero(np.diff(colour[good])) + 1
        for grp in np.split(good, splits):
            rows = remaining[grp]
            block = X[rows]
            out.append(
                _RowClass(
                    rows=rows,
                    indices=block.indices.astype(np.intp),
                    data=block.data,
                    rid=np.repeat(np.arange(rows.size), np.diff(block.indptr)),
                )
            )
        remaining = remaining[bad]
    return out


@dataclass(frozen=True)
class _QuadDual:
    """A dual that is a concave quadratic plus ``-eps|beta|`` on a box, in one variable per row.

    ``beta = y alpha`` (margin losses, ``sigma = y``) or ``beta = alpha`` (``sigma = 1``)::

        n D(beta) = sum_i s_i (lin_i beta_i - quad/2 beta_i^2 - eps |beta_i|) - (l2 n / 2)||w||^2,
        w = X^T (s sigma beta) / (l2 n),    lo <= beta_i <= hi.

    The exact maximiser over ``beta_i`` with the others fixed (``m_i = sigma_i x_i.w``,
    ``q_i = s_i ||x_i||^2 / (l2 n)``) is ``clip(soft((q beta + lin - m) / (q + quad),
    eps / (q + quad)), lo, hi)``: for hinge this is ``clip(b + (1 - m)/q, 0, 1)``, for squared
    hinge ``max(0, b + (1 - m - b/2)/(q + 1/2))``, for absolute ``clip(alpha + (y - z)/q, -1, 1)``.
    """

    sigma: FloatArray
    lin: FloatArray
    quad: float
    eps: float
    lo: float
    hi: float

    def alpha(self, beta: FloatArray) -> FloatArray:
        return self.sigma * beta


def _quad_spec(loss: str, y: FloatArray, p: dict[str, float]) -> _QuadDual:
    lo, hi = _dual_domain(loss, p)
    ones = np.ones_like(y)
    if loss in _MARGIN_LOSSES:
        quad = {
            "hinge": 0.0,
            "smooth_hinge": p.get("smoothing", 0.0),
            "squared_hinge": 0.5,
        }[loss]
        return _QuadDual(sigma=y, lin=ones, quad=quad, eps=0.0, lo=lo, hi=hi)
    quad = 1.0 if loss == "squared" else 0.0
    return _QuadDual(sigma=ones, lin=y, quad=quad, eps=p.get("epsilon", 0.0), lo=lo, hi=hi)


def _coordinate_targets(
    spec: _QuadDual, beta: FloatArray, m: FloatArray, q: FloatArray, lin: FloatArray
) -> FloatArray:
    """Vectorised exact coordinate maximisers (see :class:`_QuadDual`)."""
    den = q + spec.quad
    with np.errstate(divide="ignore", invalid="ignore"):
        c = (q * beta + lin - m) / den
        if spec.eps > 0:
            c = np.sign(c) * np.maximum(np.abs(c) - spec.eps / den, 0.0)
    zero = den <= 0  # an empty row (or s_i = 0) with quad = 0: maximise a linear function
    if np.any(zero):
        slope = (lin - m)[zero]
        c[zero] = np.where(slope > spec.eps, spec.hi, np.where(slope < -spec.eps, spec.lo, 0.0))
    return np.clip(c, spec.lo, spec.hi)


def _sweep_sparse(
    prob: _Problem,
    spec: _QuadDual,
    beta: FloatArray,
    w: FloatArray,
    rng: np.random.Generator,
) -> None:
    """One exact coordinate-ascent sweep over all rows, class by class (in place)."""
    classes = prob.classes()
    coef = prob.s * spec.sigma / prob.scale
    q = prob.s * prob.sqnorm / prob.scale
    for ci in rng.permutation(len(classes)):
        c = classes[ci]
        r = c.rows
        z = np.bincount(c.rid, weights=c.data * w[c.indices], minlength=r.size)
        old = beta[r]
        new = _coordinate_targets(spec, old, spec.sigma[r] * z, q[r], spec.lin[r])
        delta = new - old
        if not np.any(delta):
            continue
        beta[r] = new
        w[c.indices] += c.data * (coef[r] * delta)[c.rid]  # indices are unique within a class


def _sweep_dense(
    prob: _Problem,
    spec: _QuadDual,
    beta: FloatArray,
    w: FloatArray,
    rng: np.random.Generator,
) -> None:
    """One exact coordinate-ascent sweep in random order, one row at a time (in place)."""
    X = prob.X
    assert isinstance(X, np.ndarray)
    coef = (prob.s * spec.sigma / prob.scale).tolist()
    q = (prob.s * prob.sqnorm / prob.scale).tolist()
    sig = spec.sigma.tolist()
    lin = spec.lin.tolist()
    quad, eps, lo, hi = spec.quad, spec.eps, spec.lo, spec.hi
    for i in rng.permutation(prob.n).tolist():
        xi = X[i]
        m = sig[i] * float(xi @ w)
        b = float(beta[i])
        den = q[i] + quad
        if den > 0:
            c = (q[i] * b + lin[i] - m) / den
            if eps > 0:
                t = eps / den
                c = c - t if c > t else (c + t if c < -t else 0.0)
        else:
            slope = lin[i] - m
            c = hi if slope > eps else (lo if slope < -eps else 0.0)
        c = min(max(c, lo), hi)
        if c != b:
            beta[i] = c
            w += (coef[i] * (c - b)) * xi


def _face_bounds(spec: _QuadDual, beta: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Bounds of the linear piece containing ``beta`` (0 splits the box when ``eps > 0``)."""
    lb = np.full_like(beta, spec.lo)
    ub = np.full_like(beta, spec.hi)
    if spec.eps > 0:
        ub = np.where(beta < 0, 0.0, ub)
        lb = np.where(beta > 0, 0.0, lb)
    return lb, ub


def _separable_part(spec: _QuadDual, s: FloatArray, lin: FloatArray, b: FloatArray) -> float:
    """``sum s (lin b - quad/2 b^2 - eps |b|)``: the row-separable part of ``n D``."""
    return float(np.dot(s, lin * b - 0.5 * spec.quad * b * b - spec.eps * np.abs(b)))


def _newton_face_step(prob: _Problem, spec: _QuadDual, beta: FloatArray) -> bool:
    """A Newton step on the dual over the current face; returns whether the dual increased.

    Variables strictly inside their piece (``F``) are free, the others fixed. On that face
    ``n D`` is a concave quadratic with gradient ``g_F`` and Hessian ``-H_FF``,
    ``H = diag(s sigma) X_F X_F^T diag(s sigma) / (l2 n) + quad diag(s)``. The direction is
    ``delta = H^+ g`` (ascent: ``g . delta = g^T H^+ g >= 0``; dense least squares for small
    ``F``, MINRES otherwise). Candidates: the exact maximiser along ``delta`` up to the first
    bound (the active-set step) and projected steps ``clip(beta + t delta)`` for ``t = 1, 1/2,
    1/4`` (Bertsekas' projected Newton: many bounds become active at once). The candidate with
    the largest exactly evaluated dual value is kept, and only if it beats the current one, so
    the dual never decreases.
    """
    lb_all, ub_all = _face_bounds(spec, beta)
    free = (beta > lb_all) & (beta < ub_all) & (prob.s > 0)
    if spec.eps > 0:
        free &= beta != 0
    F = np.flatnonzero(free)
    if F.size == 0:
        return False
    w = prob.w_of(spec.alpha(beta))
    XF = prob.X[F]
    sF, linF = prob.s[F], spec.lin[F]
    coef = sF * spec.sigma[F]
    m = spec.sigma[F] * _matvec(XF, w)
    bF = beta[F]
    g = sF * (linF - spec.quad * bF - spec.eps * np.sign(bF) - m)
    if not np.any(g):
        return False
    if F.size <= _DENSE_FACE_LIMIT:
        G = XF @ XF.T
        G = G.toarray() if sp.issparse(G) else np.asarray(G)
        H = coef[:, None] * G * coef[None, :] / prob.scale + np.diag(spec.quad * sF)
        delta = linalg.lstsq(H, g, lapack_driver="gelsd")[0]
        resid = g - H @ delta
    else:

        def hv(v: FloatArray) -> FloatArray:
            return coef * _matvec(XF, _rmatvec(XF, coef * v)) / prob.scale + spec.quad * sF * v

        op = LinearOperator((F.size, F.size), matvec=hv, dtype=np.float64)
        delta = minres(op, g, rtol=1e-10, maxiter=500)[0]
        resid = g - hv(delta)
    slope = float(g @ delta)
    if not slope > 0:
        return False
    lb, ub = lb_all[F], ub_all[F]
    scale = prob.scale

    def value(new: FloatArray) -> float:  # n D(beta) with beta_F = new, up to a constant
        wn = w + _rmatvec(XF, coef * (new - bF)) / scale
        return _separable_part(spec, sF, linF, new) - 0.5 * scale * float(wn @ wn)

    candidates = [np.clip(bF + t * delta, lb, ub) for t in (1.0, 0.5, 0.25)]
    u = _rmatvec(XF, coef * delta)
    curv = float(u @ u) / scale + spec.quad * float(np.dot(sF, delta**2))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(delta > 0, (ub - bF) / delta, np.where(delta < 0, (lb - bF) / delta, np.inf))
    t_max = float(ratios.min())
    t = min(slope / curv if curv > 0 else math.inf, t_max)
    if math.isfinite(t) and t > 0:
        first = np.clip(bF + t * delta, lb, ub)
        if t == t_max:
            j = int(np.argmin(ratios))
            first[j] = ub[j] if delta[j] > 0 else lb[j]
        candidates.append(first)
    # With more free rows than rank, g has a part in the null space of H: along it the dual
    # grows linearly (an LP-like direction), so go to the boundary and beyond, projected.
    if float(np.abs(resid).max()) > 1e-9 * float(np.abs(g).max()):
        with np.errstate(divide="ignore", invalid="ignore"):
            r_ratios = np.where(resid > 0, (ub - bF) / resid, np.where(resid < 0, (lb - bF) / resid, np.inf))
        t_r = float(r_ratios.min())
        if math.isfinite(t_r) and t_r > 0:
            base = candidates[0]
            candidates += [np.clip(base + f * t_r * resid, lb, ub) for f in (1.0, 4.0, 16.0, 64.0)]
    values = [value(c) for c in candidates]
    k = int(np.argmax(values))
    if not values[k] > value(bF):
        return False
    beta[F] = candidates[k]
    return True


@dataclass
class _Cert:
    w: FloatArray
    alpha: FloatArray
    primal: float
    dual: float

    @property
    def gap(self) -> float:
        return self.primal - self.dual

    def rel(self) -> float:
        return self.gap / max(1.0, abs(self.primal))


def _certify_dual(prob: _Problem, loss: str, p: dict[str, float], alpha: FloatArray) -> _Cert:
    """Certificate at a dual point: ``w = w(alpha)``, ``P(w)`` and ``D(alpha)`` from scratch."""
    w = prob.w_of(alpha)
    return _Cert(
        w=w,
        alpha=alpha.copy(),
        primal=primal(prob.X, prob.y, w, loss, prob.l2, prob.s, **p),
        dual=dual(prob.X, prob.y, alpha, loss, prob.l2, prob.s, **p),
    )


def _certify_primal(prob: _Problem, loss: str, p: dict[str, float], w: FloatArray) -> _Cert:
    """Certificate at a primal point of a smooth loss: ``alpha_i = -phi'(x_i.w)``.

    Also evaluates ``P(w(alpha))`` and keeps the better of the two primal points.
    """
    alpha = _neg_derivative(_matvec(prob.X, w), prob.y, loss, p)
    best_w, best_p = w, primal(prob.X, prob.y, w, loss, prob.l2, prob.s, **p)
    w2 = prob.w_of(alpha)
    p2 = primal(prob.X, prob.y, w2, loss, prob.l2, prob.s, **p)
    if p2 < best_p:
        best_w, best_p = w2, p2
    return _Cert(
        w=best_w.copy(),
        alpha=alpha,
        primal=best_p,
        dual=dual(prob.X, prob.y, alpha, loss, prob.l2, prob.s, **p),
    )


def _neg_derivative(z: FloatArray, y: FloatArray, loss: str, p: dict[str, float]) -> FloatArray:
    """``alpha = -phi'(z)`` (for hinge-type kinks a valid subgradient choice, clipped to the box)."""
    m = y * z
    if loss == "logistic":
        return y * special.expit(-m)
    if loss == "smooth_hinge":
        return y * np.clip((1.0 - m) / p["smoothing"], 0.0, 1.0)
    if loss == "squared_hinge":
        return y * 2.0 * np.maximum(0.0, 1.0 - m)
    if loss == "squared":
        return y - z
    if loss == "hinge":
        return y * (m < 1.0).astype(np.float64)
    if loss == "quantile":
        return np.where(z < y, p["tau"], p["tau"] - 1.0)
    r = y - z
    out = np.sign(r)
    if loss == "epsilon_insensitive":
        out = np.where(np.abs(r) <= p["epsilon"], 0.0, out)
    return out


def _dual_lbfgsb(
    prob: _Problem,
    spec: _QuadDual,
    beta0: FloatArray,
    deadline: float,
    maxiter: int = 20000,
) -> FloatArray:
    """Maximise the box-constrained dual with L-BFGS-B (``eps > 0``: split ``beta = p - m``)."""
    n, scale, s = prob.n, prob.scale, prob.s
    split = spec.eps > 0

    def value_grad(x: FloatArray) -> tuple[float, FloatArray]:
        b = x[:n] - x[n:] if split else x
        w = _rmatvec(prob.X, s * spec.sigma * b) / scale
        m = spec.sigma * _matvec(prob.X, w)
        val = np.dot(s, spec.lin * b - 0.5 * spec.quad * b * b) - 0.5 * scale * float(w @ w)
        g = s * (spec.lin - spec.quad * b - m)
        if split:
            val -= spec.eps * float(np.dot(s, x[:n] + x[n:]))
            gs = s * spec.eps
            return -val / n, -np.concatenate([g - gs, -g - gs]) / n
        return -val / n, -g / n

    if split:
        x0 = np.concatenate([np.maximum(beta0, 0.0), np.maximum(-beta0, 0.0)])
        bounds = optimize.Bounds(np.zeros(2 * n), np.ones(2 * n))
    else:
        x0 = np.clip(beta0, spec.lo, spec.hi)
        bounds = optimize.Bounds(np.full(n, spec.lo), np.full(n, spec.hi))

    def stop(intermediate_result: optimize.OptimizeResult) -> None:
        if time.perf_counter() > deadline:
            raise StopIteration

    res = optimize.minimize(
        value_grad,
        x0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        callback=stop,
        options={
            "maxiter": maxiter,
            "maxfun": 4 * maxiter,
            "ftol": 1e-16,
            "gtol": 1e-14,
            "maxcor": 30,
        },
    )
    x = np.asarray(res.x, dtype=np.float64)
    b = x[:n] - x[n:] if split else x
    return np.clip(b, spec.lo, spec.hi)


_IPM_GRAM_LIMIT = 3000  # rows: form the n x n Gram matrix of the dual
_IPM_WOODBURY_LIMIT = 1500  # features: at most this many for the d x d Woodbury system
_IPM_DENSE_ENTRIES = 30_000_000  # and n * d at most this (W is densified: 240 MB)


def _step_len(v: FloatArray, dv: FloatArray) -> float:
    """Largest ``a <= 1`` with ``v + a dv >= 0``."""
    neg = dv < 0
    return float(min(1.0, np.min(-v[neg] / dv[neg]))) if np.any(neg) else 1.0


@dataclass
class _IpmIterate:
    """Slacks and multipliers of the interior-point method (``su``, ``zu`` unused where
    ``hi = inf``)."""

    sl: FloatArray
    su: FloatArray
    zl: FloatArray
    zu: FloatArray
    fin_u: npt.NDArray[np.bool_]

    def direction(
        self,
        solve: Callable[[FloatArray, FloatArray], FloatArray],
        rd: FloatArray,
        tl: FloatArray,
        tu: FloatArray,
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Newton step for ``Q x - b - zl + zu = 0``, ``sl zl = tl``-target, ``su zu`` likewise.

        Eliminating the multipliers leaves ``(Q + zl/sl + zu/su) dx = -rd + tl/sl - tu/su``.
        """
        fin = self.fin_u
        dg = self.zl / self.sl + np.where(fin, self.zu / self.su, 0.0)
        dx = solve(dg, -rd + tl / self.sl - np.where(fin, tu / self.su, 0.0))
        dzl = (tl - self.zl * dx) / self.sl
        dzu = np.where(fin, (tu + self.zu * dx) / self.su, 0.0)
        return dx, dzl, dzu

    def max_step(self, dx: FloatArray, dzl: FloatArray, dzu: FloatArray) -> float:
        fin = self.fin_u
        return min(
            _step_len(self.sl, dx),
            _step_len(self.su, np.where(fin, -dx, 0.0)),
            _step_len(self.zl, dzl),
            _step_len(np.where(fin, self.zu, 1.0), dzu),
        )


class _DualSystem:
    """``Q = W W^T + diag(qdiag)`` (the dual Hessian) and solves of ``(Q + diag(a)) x = r``.

    Small ``n``: Cholesky of the dense ``n x n`` matrix. Large ``n`` with small ``d``:
    Woodbury's identity with the ``d x d`` matrix ``I + W^T (diag(a + qdiag))^-1 W``, solved by
    a symmetric eigendecomposition (robust when ``a`` spans many orders of magnitude). The last
    factorisation is cached: the predictor and the corrector share it.
    """

    def __init__(self, W: Matrix, qdiag: FloatArray, *, woodbury: bool) -> None:
        self.qdiag = qdiag
        self.woodbury = woodbury
        self._key: FloatArray | None = None
        self._factor: Any = None
        if woodbury:
            self.W = W.toarray() if sp.issparse(W) else np.asarray(W)
            self.norm = float((self.W * self.W).sum()) + float(qdiag.max())  # >= ||Q||_2
        else:
            G = W @ W.T
            self.G = G.toarray() if sp.issparse(G) else np.asarray(G)
            self.norm = float(np.abs(self.G).sum(axis=1).max()) + float(qdiag.max())

    def matvec(self, v: FloatArray) -> FloatArray:
        if self.woodbury:
            return self.W @ (self.W.T @ v) + self.qdiag * v
        return self.G @ v + self.qdiag * v

    def solve(self, a: FloatArray, r: FloatArray) -> FloatArray:
        if self._key is None or not np.array_equal(self._key, a):
            self._key = a.copy()
            if self.woodbury:
                ai = 1.0 / (a + self.qdiag)
                K = self.W.T @ (ai[:, None] * self.W)
                K[np.diag_indices_from(K)] += 1.0
                self._factor = (ai, linalg.eigh(K))
            else:
                M = self.G.copy()
                M[np.diag_indices_from(M)] += a + self.qdiag
                self._factor = linalg.cho_factor(M, check_finite=False)
        if not self.woodbury:
            return np.asarray(linalg.cho_solve(self._factor, r, check_finite=False))
        ai, (ev, V) = self._factor
        x = np.zeros_like(r)
        res = r
        for _ in range(3):  # Woodbury cancels badly when a spans many decades: refine
            t = V @ ((V.T @ (self.W.T @ (ai * res))) / ev)
            x = x + ai * (res - self.W @ t)
            res = r - self.matvec(x) - a * x
        return x


def _dual_ipm(prob: _Problem, spec: _QuadDual, deadline: float, max_iter: int = 200) -> FloatArray | None:
    """Primal-dual interior-point method (Mehrotra) for the dual box QP; ``None`` if too big.

    Minimises ``f(x) = x^T Q x / 2 - b^T x`` over ``l <= x <= u`` with ``x = beta`` (rows with
    ``s_i = 0`` drop out), ``Q = diag(s sigma) X X^T diag(s sigma) / (l2 n) + quad diag(s)``,
    ``b = s lin``; with ``eps > 0`` the variable is split, ``beta = p - m``, ``p, m >= 0`` and
    the linear term gains ``-eps s (p + m)``. Each Newton system ``(Q + D) dx = r`` (``D``
    diagonal, from the barrier) is solved densely: with the ``n x n`` matrix when ``n`` is
    small, else through Woodbury's identity with a ``d x d`` matrix. Interior-point iterates
    converge to the analytic centre of the optimal face, so degenerate duals (more free rows
    than features) are no harder than others; the result is then polished and certified.
    """
    act = np.flatnonzero(prob.s > 0)
    beta = np.zeros(prob.n)
    if act.size == 0:
        return beta
    N, d = act.size, prob.d
    woodbury = d <= _IPM_WOODBURY_LIMIT and N * d <= _IPM_DENSE_ENTRIES and (2 * d < N or N > _IPM_GRAM_LIMIT)
    if N > _IPM_GRAM_LIMIT and not woodbury:
        return None
    Xa = prob.X[act]
    coef = prob.s[act] * spec.sigma[act]
    root = math.sqrt(prob.scale)
    qdiag = spec.quad * prob.s[act]
    b = prob.s[act] * spec.lin[act]
    W = (sp.diags(coef / root) @ Xa) if sp.issparse(Xa) else (coef / root)[:, None] * Xa
    system = _DualSystem(W, qdiag, woodbury=woodbury)
    q_mv, solve_q, norm_q = system.matvec, system.solve, system.norm

    split = spec.eps > 0
    q2_mv: Callable[[FloatArray], FloatArray]
    solve2: Callable[[FloatArray, FloatArray], FloatArray]
    if split:
        eps_s = spec.eps * prob.s[act]
        b2 = np.concatenate([b - eps_s, -b - eps_s])
        lo = np.zeros(2 * N)
        hi = np.concatenate([np.full(N, spec.hi), np.full(N, -spec.lo)])

        def split_mv(x: FloatArray) -> FloatArray:
            y = q_mv(x[:N] - x[N:])
            return np.concatenate([y, -y])

        def split_solve(dg: FloatArray, r: FloatArray) -> FloatArray:
            # [[Q + Dp, -Q], [-Q, Q + Dm]] [xp; xm] = [rp; rm] reduces, with db = xp - xm, to
            # (Q + Dp Dm / (Dp + Dm)) db = (Dm rp - Dp rm) / (Dp + Dm).
            dp, dm, rp, rm = dg[:N], dg[N:], r[:N], r[N:]
            tot = dp + dm
            db = solve_q(dp * dm / tot, (dm * rp - dp * rm) / tot)
            xp = (dm * db + rp + rm) / tot
            return np.concatenate([xp, xp - db])

        q2_mv, solve2 = split_mv, split_solve

    else:
        b2 = b
        lo = np.full(N, spec.lo)
        hi = np.full(N, spec.hi)
        q2_mv, solve2 = q_mv, solve_q

    fin_u = np.isfinite(hi)
    # Slacks are iterated as variables (x = lo + sl = hi - su): recomputing them from x would
    # round to zero next to a bound such as -1.
    sl = np.where(fin_u, 0.5 * (hi - lo), 1.0)
    su = np.where(fin_u, sl, 1.0)
    zl = np.ones_like(sl)
    zu = np.where(fin_u, 1.0, 0.0)
    n_con = sl.size + int(fin_u.sum())
    scale_b = 1.0 + float(np.abs(b2).max())

    def x_of(sl: FloatArray, su: FloatArray) -> FloatArray:
        return np.where(fin_u & (su < sl), hi - su, lo + sl)

    # Merit: complementarity and dual residual, each relative to its scale. The best iterate is
    # returned: near the end, rounding can make later iterates worse.
    best = (math.inf, sl, su, zl, zu)
    stall = 0
    for _ in range(max_iter):
        x = x_of(sl, su)
        rd = q2_mv(x) - b2 - zl + zu
        mu = (float(sl @ zl) + float(su[fin_u] @ zu[fin_u])) / n_con
        merit = max(
            mu / scale_b,
            float(np.abs(rd).max()) / (scale_b + norm_q * float(np.abs(x).max())),
        )
        if merit < 0.99 * best[0]:
            best, stall = (merit, sl, su, zl, zu), 0
        else:
            stall += 1
        tiny = min(float(sl.min()), float(su.min())) < 1e-280
        if merit < 1e-15 or stall > 5 or tiny or time.perf_counter() > deadline:
            break
        it = _IpmIterate(sl=sl, su=su, zl=zl, zu=zu, fin_u=fin_u)
        # Predictor (affine scaling), then Mehrotra's corrector.
        dx, dzl, dzu = it.direction(solve2, rd, -sl * zl, np.where(fin_u, -su * zu, 0.0))
        a = it.max_step(dx, dzl, dzu)
        comp_aff = float((sl + a * dx) @ (zl + a * dzl))
        comp_aff += float(((su - a * dx) * (zu + a * dzu))[fin_u].sum())
        sigma = (comp_aff / n_con / mu) ** 3
        tl = sigma * mu - sl * zl - dx * dzl
        tu = np.where(fin_u, sigma * mu - su * zu + dx * dzu, 0.0)
        dx, dzl, dzu = it.direction(solve2, rd, tl, tu)
        a = 0.995 * it.max_step(dx, dzl, dzu)
        sl = sl + a * dx
        su = np.where(fin_u, su - a * dx, 1.0)
        zl = zl + a * dzl
        zu = np.where(fin_u, zu + a * dzu, 0.0)
    _, sl, su, zl, zu = best
    x = x_of(sl, su)
    xb = x[:N] - x[N:] if split else x
    beta[act] = np.clip(xb, spec.lo, spec.hi)
    # Snap variables whose multiplier dominates their slack onto the bound (strict
    # complementarity guess); the polish that follows corrects any wrong guess.
    at_lo = zl > sl
    at_hi = fin_u & (zu > su)
    if split:
        beta[act[at_lo[:N] & at_lo[N:]]] = 0.0
        beta[act[at_hi[:N]]] = spec.hi
        beta[act[at_hi[N:]]] = spec.lo
    else:
        beta[act[at_lo]] = spec.lo
        beta[act[at_hi]] = spec.hi
    return beta


def _polish_quad(
    prob: _Problem,
    loss: str,
    p: dict[str, float],
    spec: _QuadDual,
    beta: FloatArray,
    target: float,
    deadline: float,
) -> tuple[_Cert, int]:
    """Exact dual coordinate sweeps alternated with face-Newton steps, until the gap certifies.

    Returns the best certificate seen and the number of rounds. Coordinate sweeps identify the
    active set (which bounds are tight); the face-Newton step then solves the remaining linear
    system, which coordinate ascent alone does slowly on ill-conditioned data. The number of
    sweeps per round doubles (up to 64) while Newton steps do not at least halve the gap, and
    halves when they do.
    """
    rng = np.random.default_rng(prob.seed)
    beta = np.clip(beta, spec.lo, spec.hi)
    best = _certify_dual(prob, loss, p, spec.alpha(beta))
    sweep = _sweep_sparse if prob.sparse else _sweep_dense
    rounds = 0
    stall = 0
    sweeps = 1
    while best.rel() > target and time.perf_counter() < deadline and stall < 30:
        rounds += 1
        w = prob.w_of(spec.alpha(beta))
        for _ in range(sweeps):
            sweep(prob, spec, beta, w, rng)
        after_sweeps = _certify_dual(prob, loss, p, spec.alpha(beta))
        for _ in range(3):
            if not _newton_face_step(prob, spec, beta):
                break
        cert = _certify_dual(prob, loss, p, spec.alpha(beta))
        sweeps = max(1, sweeps // 2) if cert.gap < 0.5 * after_sweeps.gap else min(64, 2 * sweeps)
        for c in (after_sweeps, cert):
            if c.gap < best.gap * (1 - 1e-6):
                best, stall = c, -1
        stall += 1
    return best, rounds


# --------------------------------------------------------------------------------------------
# Per-loss reference methods
# --------------------------------------------------------------------------------------------


def _weighted_gram(X: Matrix, h: FloatArray) -> FloatArray:
    """Dense ``X^T diag(h) X``."""
    if sp.issparse(X):
        return np.asarray((X.T @ sp.diags(h) @ X).toarray())
    return np.asarray(X.T @ (h[:, None] * X))


def _gram_operator(X: Matrix, h: FloatArray, shift: float) -> LinearOperator:
    """``v -> X^T diag(h) X v + shift v`` as a LinearOperator."""

    def mv(v: FloatArray) -> FloatArray:
        return _rmatvec(X, h * _matvec(X, v)) + shift * v

    d = X.shape[1]
    return LinearOperator((d, d), matvec=mv, dtype=np.float64)


def _ref_squared(prob: _Problem, p: dict[str, float]) -> tuple[_Cert, str]:
    # Ridge in closed form: n P(w) = sum s_i (x_i.w - y_i)^2 / 2 + (l2 n / 2)||w||^2, whose
    # minimiser solves (X^T S X + l2 n I) w = X^T S y. The optimal dual is alpha_i = y_i - x_i.w,
    # and the certificate is the gap at that alpha (quadratic in the error of w).
    X, s, y, scale = prob.X, prob.s, prob.y, prob.scale
    rhs = _rmatvec(X, s * y)
    if prob.d <= _DENSE_FEATURE_LIMIT:
        A = _weighted_gram(X, s)
        A[np.diag_indices_from(A)] += scale
        w = linalg.solve(A, rhs, assume_a="pos")
        method = "normal equations (Cholesky)"
    else:
        w = cg(_gram_operator(X, s, scale), rhs, rtol=1e-15, atol=0.0, maxiter=5000)[0]
        method = "normal equations (conjugate gradient)"
    cert = _certify_primal(prob, "squared", p, w)
    return cert, method + "; dual alpha = y - Xw; certified by duality gap"


def _solve_box_dual(
    prob: _Problem,
    loss: str,
    p: dict[str, float],
    beta0: FloatArray,
    target: float,
    deadline: float,
) -> tuple[_Cert, str]:
    """Maximise a :class:`_QuadDual` from ``beta0`` and return the best certificate seen.

    Small problems (``min(n, d)`` moderate): interior point, then the exact polish. Large ones:
    L-BFGS-B on the dual (30 % of the remaining time), then the exact polish, whose coordinate
    sweeps are vectorised over rows with disjoint supports.
    """
    spec = _quad_spec(loss, prob.y, p)
    beta0 = np.clip(beta0, spec.lo, spec.hi)
    start = _certify_dual(prob, loss, p, spec.alpha(beta0))
    if start.rel() <= target:
        return start, "start"
    beta = _dual_ipm(prob, spec, deadline)
    if beta is not None:
        first = "interior point (Mehrotra) on the dual box QP"
    else:
        budget = max(0.0, deadline - time.perf_counter())
        beta = _dual_lbfgsb(prob, spec, beta0, time.perf_counter() + 0.3 * budget)
        first = "L-BFGS-B on the dual box QP"
    if spec.eps > 0:
        first += " (split alpha = p - m)"
    cert, rounds = _polish_quad(prob, loss, p, spec, beta, target, deadline)
    if start.gap < cert.gap:
        cert = start
    return cert, f"{first} -> {rounds} rounds of exact dual CD + face Newton"


def _ref_svc(
    prob: _Problem, loss: str, p: dict[str, float], target: float, deadline: float
) -> tuple[_Cert, str]:
    # liblinear (LinearSVC, dual CD) gives a starting point only: it is known to stop short
    # (DATA.md). The box QP dual is then solved by interior point (small) or L-BFGS-B (large)
    # and polished with exact dual coordinate steps and face-Newton steps; only the duality
    # gap is trusted.
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    svc = LinearSVC(
        loss=loss,
        dual=True,
        fit_intercept=False,
        C=1.0 / prob.scale,
        tol=1e-5,  # only a start: a tighter tol doubles its time on large problems
        max_iter=5000,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc.fit(prob.X, prob.y, sample_weight=prob.s)
    w0 = np.asarray(svc.coef_, dtype=np.float64).ravel()
    m0 = prob.y * _matvec(prob.X, w0)
    if loss == "squared_hinge":
        beta0 = 2.0 * np.maximum(0.0, 1.0 - m0)
    else:  # a smoothed subgradient: the exact dual of a hinge w is not unique on the margin
        beta0 = np.clip((1.0 - m0) / 1e-3, 0.0, 1.0)
    cert, how = _solve_box_dual(prob, loss, p, beta0, target, deadline)
    return cert, f"LinearSVC start -> {how}; certified by duality gap"


def _ref_logistic(prob: _Problem, p: dict[str, float], target: float, deadline: float) -> tuple[_Cert, str]:
    # scikit-learn LogisticRegression (C = 1/(l2 n)) as a start, then Newton's method on the
    # primal in numpy (explicit Hessian for small d, Newton-CG otherwise) with backtracking.
    # Certificate: alpha_i = y_i sigmoid(-y_i x_i.w), the exact dual of the primal point.
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    solver = "newton-cholesky" if prob.d <= _DENSE_FEATURE_LIMIT else "lbfgs"
    clf = LogisticRegression(
        C=1.0 / prob.scale,
        fit_intercept=False,
        solver=solver,
        tol=1e-12,
        max_iter=10000,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(prob.X, prob.y, sample_weight=prob.s)
    w = np.asarray(clf.coef_, dtype=np.float64).ravel()
    w, steps = _primal_newton(prob, "logistic", p, w, target, deadline)
    return (
        _certify_primal(prob, "logistic", p, w),
        f"LogisticRegression({solver}) start -> {steps} primal Newton steps; "
        "dual alpha = y sigmoid(-y Xw); certified by duality gap",
    )


def _smooth_parts(
    z: FloatArray, y: FloatArray, loss: str, p: dict[str, float]
) -> tuple[FloatArray, FloatArray]:
    """``phi'(z)`` and a (generalised) ``phi''(z)`` for the C^1 losses."""
    m = y * z
    if loss == "logistic":
        sg = special.expit(-m)
        return -y * sg, sg * special.expit(m)
    if loss == "squared":
        return z - y, np.ones_like(z)
    if loss == "squared_hinge":
        return -2.0 * y * np.maximum(0.0, 1.0 - m), np.where(m < 1.0, 2.0, 0.0)
    g = p["smoothing"]  # smooth_hinge
    inner = (m < 1.0) & (m > 1.0 - g)
    return -y * np.clip((1.0 - m) / g, 0.0, 1.0), inner / g


def _primal_newton(
    prob: _Problem,
    loss: str,
    p: dict[str, float],
    w: FloatArray,
    target: float,
    deadline: float,
    max_steps: int = 50,
) -> tuple[FloatArray, int]:
    """(Generalised) Newton's method on the primal with Armijo backtracking.

    Stops when the certified gap at the iterate is below ``target`` or a step fails to decrease
    ``P``.
    """
    X, s, n, l2 = prob.X, prob.s, prob.n, prob.l2
    f = primal(X, prob.y, w, loss, l2, s, **p)
    steps = 0
    for steps in range(1, max_steps + 1):
        if _certify_primal(prob, loss, p, w).rel() <= target or time.perf_counter() > deadline:
            return w, steps - 1
        z = _matvec(X, w)
        d1, d2 = _smooth_parts(z, prob.y, loss, p)
        grad = _rmatvec(X, s * d1) / n + l2 * w
        h = s * d2 / n
        if prob.d <= _DENSE_FEATURE_LIMIT:
            H = _weighted_gram(X, h)
            H[np.diag_indices_from(H)] += l2
            step = -linalg.solve(H, grad, assume_a="pos")
        else:
            op = _gram_operator(X, h, l2)
            step = -cg(op, grad, rtol=1e-12, atol=0.0, maxiter=1000)[0]
        t = 1.0
        slope = float(grad @ step)
        while t > 1e-12:
            wn = w + t * step
            fn = primal(X, prob.y, wn, loss, l2, s, **p)
            if fn <= f + 1e-4 * t * slope:
                break
            t *= 0.5
        else:
            return w, steps - 1
        if fn >= f and t < 1.0:
            return w, steps - 1
        w, f = wn, fn
    return w, steps


def _primal_lbfgs(
    prob: _Problem, loss: str, p: dict[str, float], w0: FloatArray, deadline: float
) -> FloatArray:
    """L-BFGS-B on a C^1 primal with its analytic gradient and machine-precision tolerances."""
    X, s, n, l2 = prob.X, prob.s, prob.n, prob.l2

    def value_grad(w: FloatArray) -> tuple[float, FloatArray]:
        z = _matvec(X, w)
        d1, _ = _smooth_parts(z, prob.y, loss, p)
        val = float(np.dot(s, loss_value(z, prob.y, loss, **p)) / n + 0.5 * l2 * (w @ w))
        return val, _rmatvec(X, s * d1) / n + l2 * w

    def stop(intermediate_result: optimize.OptimizeResult) -> None:
        if time.perf_counter() > deadline:
            raise StopIteration

    res = optimize.minimize(
        value_grad,
        w0,
        jac=True,
        method="L-BFGS-B",
        callback=stop,
        options={
            "maxiter": 100000,
            "maxfun": 400000,
            "ftol": 1e-16,
            "gtol": 1e-15,
            "maxcor": 30,
        },
    )
    return np.asarray(res.x, dtype=np.float64)


def _ref_smooth_hinge(
    prob: _Problem, p: dict[str, float], target: float, deadline: float
) -> tuple[_Cert, str]:
    # The smoothed hinge is C^1 with a (1/gamma)-Lipschitz derivative: L-BFGS-B on the primal
    # with the analytic gradient; its exact dual b = clip((1 - m)/gamma, 0, 1) certifies it.
    # If that is not enough, the dual is solved and polished with exact coordinate steps
    # (b + (1 - m - gamma b)/(q + gamma), clipped) as for the hinge.
    budget = max(0.0, deadline - time.perf_counter())
    w = _primal_lbfgs(prob, "smooth_hinge", p, np.zeros(prob.d), time.perf_counter() + 0.4 * budget)
    primal_cert = _certify_primal(prob, "smooth_hinge", p, w)
    how = "L-BFGS-B on the primal; dual b = clip((1 - m)/gamma, 0, 1)"
    if primal_cert.rel() <= target:
        return primal_cert, how + "; certified by duality gap"
    beta = prob.y * primal_cert.alpha
    cert, more = _solve_box_dual(prob, "smooth_hinge", p, beta, target, deadline)
    if primal_cert.gap <= cert.gap:
        return primal_cert, how + "; certified by duality gap"
    return cert, f"{how} -> {more}; certified by duality gap"


def _ref_box_regression(
    prob: _Problem, loss: str, p: dict[str, float], target: float, deadline: float
) -> tuple[_Cert, str]:
    # absolute / epsilon_insensitive / quantile with l2 > 0 are quadratic programs, not LPs.
    # Their dual is a box QP (eps-insensitive: split alpha = p - m, p, m in [0, 1]), solved from
    # alpha = 0 and polished with exact coordinate steps (soft-thresholded for eps).
    cert, how = _solve_box_dual(prob, loss, p, np.zeros(prob.n), target, deadline)
    return cert, how + "; certified by duality gap"


def reference_optimum(
    X: MatrixLike,
    y: npt.ArrayLike,
    loss: str,
    l2: float,
    s: npt.ArrayLike | None = None,
    *,
    rtol: float = 1e-9,
    strict: bool = True,
    max_seconds: float = 600.0,
    seed: int = 0,
    **params: float,
) -> Reference:
    """Certified minimiser of ``P(w) = (1/n) sum s_i phi(x_i.w, y_i) + (l2/2)||w||^2``.

    One method per loss, independent of the product (see the module docstring):

    - ``squared``: normal equations (Cholesky, or CG for d > 4000).
    - ``hinge``, ``squared_hinge``: LinearSVC start, L-BFGS-B on the dual box QP, then exact dual
      coordinate ascent (vectorised over rows with disjoint supports for sparse ``X``) alternated
      with Newton steps on the current face of the box.
    - ``logistic``: LogisticRegression start, then primal Newton steps.
    - ``smooth_hinge``: L-BFGS-B on the primal, then the dual polish above if needed.
    - ``absolute``, ``epsilon_insensitive``, ``quantile``: L-BFGS-B on the dual box QP, then the
      dual polish.

    Whatever the method, the returned value is trusted only because ``gap = P(w) - D(alpha)`` is
    recomputed from scratch with :func:`primal` and :func:`dual` and checked.

    Parameters
    ----------
    X : array_like or scipy.sparse matrix, shape (n, d)
        Features (sparse input is converted to CSR).
    y : array_like, shape (n,)
        Labels in {-1, +1} for margin losses, real targets otherwise.
    loss : str
        One of :data:`LOSSES`.
    l2 : float
        L2 strength (> 0).
    s : array_like, optional
        Sample weights (>= 0, default 1).
    rtol : float, default 1e-9
        Required certified gap, relative to ``max(1, P)``. The polish aims at ``rtol / 10``.
    strict : bool, default True
        Raise :class:`CertificationError` if ``rtol`` is not reached within ``max_seconds``;
        with ``False`` return the best certified point with ``certified=False``.
    max_seconds : float, default 600
        Time budget (the LinearSVC / LogisticRegression start is not interruptible).
    seed : int, default 0
        Seed of the coordinate order (results do not depend on it beyond the tolerance).
    **params : float
        ``smoothing`` (alias ``gamma``), ``epsilon``, ``tau``.

    Returns
    -------
    Reference
        Weights, ``P(w)``, certified lower bound, gap, method, certificate ``alpha``.

    Raises
    ------
    ValueError, TypeError
        Bad input (unknown loss or parameter, labels outside {-1, +1}, ``l2 <= 0``, NaN).
    CertificationError
        ``strict`` and the gap could not be certified to ``rtol``.
    """
    # One BLAS thread: the dense solves here are small, and OpenBLAS threads slow them down
    # by 50x when the cores are busy (measured: a 569 x 569 Cholesky went from 6 ms to 0.3 s).
    with threadpool_limits(limits=1, user_api="blas"):
        return _reference_optimum(X, y, loss, l2, s, rtol, strict, max_seconds, seed, params)


def _reference_optimum(
    X: MatrixLike,
    y: npt.ArrayLike,
    loss: str,
    l2: float,
    s: npt.ArrayLike | None,
    rtol: float,
    strict: bool,
    max_seconds: float,
    seed: int,
    params: dict[str, float],
) -> Reference:
    t0 = time.perf_counter()
    p = _params(loss, params)
    prob = _Problem(X, y, loss, l2, s, seed)
    deadline = t0 + max_seconds
    target = rtol / 10.0
    if loss == "squared":
        cert, method = _ref_squared(prob, p)
        if cert.rel() > target:
            spec = _quad_spec(loss, prob.y, p)
            cert2, rounds = _polish_quad(prob, loss, p, spec, cert.alpha, target, deadline)
            if cert2.gap < cert.gap:
                cert, method = cert2, method + f" + {rounds} rounds of dual polish"
    elif loss in ("hinge", "squared_hinge"):
        cert, method = _ref_svc(prob, loss, p, target, deadline)
    elif loss == "logistic":
        cert, method = _ref_logistic(prob, p, target, deadline)
    elif loss == "smooth_hinge":
        cert, method = _ref_smooth_hinge(prob, p, target, deadline)
    else:
        cert, method = _ref_box_regression(prob, loss, p, target, deadline)
    # Recompute both bounds from scratch with the public functions (what the tests rely on).
    pv = primal(prob.X, prob.y, cert.w, loss, prob.l2, prob.s, **p)
    dv = dual(prob.X, prob.y, cert.alpha, loss, prob.l2, prob.s, **p)
    gap = pv - dv
    ok = bool(gap <= rtol * max(1.0, abs(pv)))
    seconds = time.perf_counter() - t0
    if not ok and strict:
        raise CertificationError(
            f"{loss}, l2={l2}: certified gap {gap:.3e} > rtol * max(1, P) = {rtol * max(1.0, abs(pv)):.3e} "
            f"after {seconds:.1f}s ({method}); pass strict=False to get the best certified point"
        )
    return Reference(
        w=cert.w,
        primal=pv,
        lower_bound=dv,
        gap=gap,
        method=method,
        alpha=cert.alpha,
        certified=ok,
        seconds=seconds,
    )


# --------------------------------------------------------------------------------------------
# L1-penalised piecewise-linear problems as linear programs
# --------------------------------------------------------------------------------------------


def lp_optimum_l1(
    X: MatrixLike,
    y: npt.ArrayLike,
    loss: str,
    l1: float,
    s: npt.ArrayLike | None = None,
    **params: float,
) -> LPReference:
    """Exact minimiser of ``(1/n) sum_i s_i phi(x_i.w, y_i) + l1 ||w||_1`` (no L2) by LP.

    Variables ``w = w+ - w-`` (both >= 0) and slacks ``t_i >= phi(x_i.w, y_i)``::

        minimise  (1/n) sum s_i t_i + l1 sum (w+ + w-)
        hinge:      t_i >= 1 - y_i x_i.w
        absolute:   t_i >= x_i.w - y_i,               t_i >= y_i - x_i.w
        eps-insens: t_i >= x_i.w - y_i - eps,         t_i >= y_i - x_i.w - eps,   (t_i >= 0)
        quantile:   t_i >= (1 - tau)(x_i.w - y_i),    t_i >= tau (y_i - x_i.w)

    solved by HiGHS (interior point with crossover: a vertex solution, exact up to rounding)
    with feasibility tolerances 1e-10. The value is certified independently of HiGHS: the LP multipliers give
    ``alpha_i``, which is projected onto the loss's box and scaled so that
    ``||(1/n) X^T (s alpha)||_inf <= l1``; then ``(1/n) sum s_i (-phi*(-alpha_i))`` is a lower bound
    (Fenchel duality for the L1 norm).

    Parameters
    ----------
    X : array_like or scipy.sparse matrix, shape (n, d)
    y : array_like, shape (n,)
    loss : {"hinge", "absolute", "epsilon_insensitive", "quantile"}
    l1 : float
        L1 strength (>= 0).
    s : array_like, optional
        Sample weights (>= 0).
    **params : float
        ``epsilon`` or ``tau``.

    Returns
    -------
    LPReference
    """
    if loss not in _LP_LOSSES:
        raise ValueError(f"lp_optimum_l1 supports {sorted(_LP_LOSSES)}, not {loss!r}")
    p = _params(loss, params)
    if not l1 >= 0:
        raise ValueError("l1 must be >= 0")
    Xm = sp.csr_matrix(_as_matrix(X))
    n, d = Xm.shape
    yv = _as_vector(y, n, "y")
    _check_labels(loss, yv)
    sv = _weights(s, n)
    eye = sp.identity(n, format="csr")
    c = np.concatenate([np.full(2 * d, float(l1)), sv / n])
    if loss == "hinge":
        YX = sp.diags(yv) @ Xm
        A = sp.hstack([-YX, YX, -eye])
        b = -np.ones(n)
        weights = (1.0, 0.0)
    else:
        lo_w, hi_w = (1.0 - p["tau"], p["tau"]) if loss == "quantile" else (1.0, 1.0)
        e = p.get("epsilon", 0.0)
        A = sp.vstack(
            [
                sp.hstack([lo_w * Xm, -lo_w * Xm, -eye]),
                sp.hstack([-hi_w * Xm, hi_w * Xm, -eye]),
            ]
        )
        b = np.concatenate([lo_w * yv + e, -hi_w * yv + e])
        weights = (lo_w, hi_w)
    res = optimize.linprog(
        c,
        A_ub=A.tocsr(),
        b_ub=b,
        bounds=(0, None),
        method="highs-ipm",
        options={
            "primal_feasibility_tolerance": 1e-10,
            "dual_feasibility_tolerance": 1e-10,
        },
    )
    if res.status != 0:
        raise RuntimeError(f"linprog failed: {res.message}")
    xs = np.asarray(res.x)
    w = xs[:d] - xs[d : 2 * d]
    value = primal(Xm, yv, w, loss, 0.0, sv, l1=l1, **p)
    # Dual point from the multipliers (marginals <= 0): see the docstring.
    mu = -np.asarray(res.ineqlin.marginals)
    with np.errstate(divide="ignore", invalid="ignore"):
        if loss == "hinge":
            alpha = yv * mu * n / sv
        else:
            alpha = (weights[0] * mu[:n] * -1.0 + weights[1] * mu[n:]) * n / sv
    alpha = np.where(sv > 0, alpha, 0.0)
    lower = _l1_dual_bound(Xm, yv, sv, alpha, loss, l1, p)
    return LPReference(
        w=w,
        value=value,
        lower_bound=lower,
        gap=value - lower,
        lp_value=float(res.fun),
        method="scipy.optimize.linprog(method='highs-ipm', crossover to a vertex); "
        "lower bound from the LP multipliers",
    )


def _l1_dual_bound(
    X: sp.csr_matrix,
    y: FloatArray,
    s: FloatArray,
    alpha: FloatArray,
    loss: str,
    l1: float,
    p: dict[str, float],
) -> float:
    """``(1/n) sum s (-phi*(-alpha))`` after making ``alpha`` dual-feasible for the L1 problem."""
    n = X.shape[0]
    margin = loss in _MARGIN_LOSSES
    lo, hi = _dual_domain(loss, p)
    v = np.clip(alpha * y if margin else alpha, lo, hi)
    a = v * y if margin else v
    v_inf = float(np.abs(_rmatvec(X, s * a)).max(initial=0.0)) / n
    if v_inf > l1:
        a = a * (l1 / v_inf)  # 0 is in every box, so scaling keeps alpha feasible
    return float(np.dot(s, neg_conjugate(a, y, loss, **p)) / n)


# --------------------------------------------------------------------------------------------
# Data helpers
# --------------------------------------------------------------------------------------------


def breast_cancer_pm1() -> tuple[FloatArray, FloatArray]:
    """scikit-learn's breast_cancer, standardised columns, labels in {-1, +1} (569 x 30)."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    X = np.asarray(data.data, dtype=np.float64)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = np.where(np.asarray(data.target) == 1, 1.0, -1.0)
    return X, y


def make_sparse_problem(
    n: int,
    d: int,
    nnz_per_row: int,
    *,
    task: Literal["classification", "regression"] = "classification",
    noise: float = 0.1,
    seed: int = 0,
) -> tuple[sp.csr_matrix, FloatArray]:
    """Random CSR problem with unit-norm rows and ``nnz_per_row`` distinct columns per row.

    Labels come from a planted ``w ~ N(0, I)``: ``sign(x.w)`` with a fraction ``noise`` flipped
    (classification) or ``x.w + noise * N(0, 1)`` (regression).
    """
    rng = np.random.default_rng(seed)
    k = min(nnz_per_row, d)
    # Distinct columns per row: sample with replacement, then redraw collisions row-wise.
    cols = rng.integers(0, d, size=(n, k))
    cols.sort(axis=1)
    collide = np.any(cols[:, 1:] == cols[:, :-1], axis=1) if k > 1 else np.zeros(n, dtype=bool)
    for i in np.flatnonzero(collide):
        cols[i] = np.sort(rng.choice(d, size=k, replace=False))
    vals = rng.standard_normal((n, k))
    vals /= np.linalg.norm(vals, axis=1, keepdims=True)
    X = sp.csr_matrix((vals.ravel(), cols.ravel(), np.arange(0, n * k + 1, k)), shape=(n, d))
    w = rng.standard_normal(d)
    z = _matvec(X, w)
    if task == "classification":
        y = np.where(z >= 0, 1.0, -1.0)
        flip = rng.random(n) < noise
        y[flip] = -y[flip]
    else:
        y = z + noise * rng.standard_normal(n)
    return X, y
