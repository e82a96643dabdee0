"""Elastic net and Lasso (Prox-SDCA, accelerated Prox-SDCA) against certified references on real data.

The squared-loss Lasso / elastic net on sparse data is compared with scikit-learn's Lasso /
ElasticNet (the dense case, diabetes, is in test_fit.py); logistic with L1 + L2 with scikit-learn's
saga; smooth_hinge, which scikit-learn lacks, with L-BFGS-B on the split ``w = w+ - w-`` written
here. Every reference is certified by its own elastic-net duality gap (:func:`certify`), and our
objective is recomputed from the returned coefficients, never read from our model.

Elastic-net dual (Shalev-Shwartz & Zhang 2012 section 2, DESIGN.md section 3 conventions): with
``g(w) = ||w||^2/2 + (l1/l2)||w||_1``, whose conjugate is ``g*(v) = ||soft(v, l1/l2)||^2 / 2``,

    D(alpha) = (1/n) sum_i -phi*(-alpha_i) - l2 g*(X^T alpha / (l2 n)) <= min_w P(w)

for every ``alpha`` in the loss's dual domain. For the Lasso (``l2 = 0``) ``l2 g*`` becomes the
indicator of ``||X^T alpha / n||_inf <= l1``; ``alpha`` is scaled into that set first (0 lies in
every loss's dual domain, so scaling keeps it feasible).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp
from scipy import optimize
from test_fit import fit_model

from conftest import dense_xy
from references import _neg_derivative, _smooth_parts, loss_value, neg_conjugate, primal


@dataclass(frozen=True)
class Certified:
    """A primal point with the lower bound of its matched dual point ``alpha = -phi'(Xw)``."""

    w: np.ndarray
    primal: float
    lower: float
    alpha: np.ndarray  # feasible for the dual of the given (l1, l2) problem

    @property
    def gap(self) -> float:
        return self.primal - self.lower


def en_lower_bound(
    x: np.ndarray | sp.csr_matrix,
    y: np.ndarray,
    alpha: np.ndarray,
    loss: str,
    l2: float,
    l1: float,
    **params: float,
) -> tuple[float, np.ndarray]:
    """The elastic-net (or Lasso) dual value of the module docstring and the feasible ``alpha`` used."""
    n = y.size
    corr = np.asarray(x.T @ alpha).ravel() / n
    if l2 == 0.0:
        top = np.abs(corr).max(initial=0.0)
        if top > l1:
            alpha = alpha * (l1 / top)
        return float(neg_conjugate(alpha, y, loss, **params).mean()), alpha
    soft = np.maximum(np.abs(corr) - l1, 0.0) / l2
    return float(neg_conjugate(alpha, y, loss, **params).mean() - 0.5 * l2 * soft @ soft), alpha


def certify(
    x: np.ndarray | sp.csr_matrix,
    y: np.ndarray,
    w: np.ndarray,
    loss: str,
    l2: float,
    l1: float,
    **params: float,
) -> Certified:
    alpha = _neg_derivative(np.asarray(x @ w).ravel(), y, loss, params)
    lower, alpha = en_lower_bound(x, y, alpha, loss, l2, l1, **params)
    return Certified(np.asarray(w, dtype=float), primal(x, y, w, loss, l2, l1=l1, **params), lower, alpha)


def split_lbfgsb(
    x: np.ndarray, y: np.ndarray, loss: str, l2: float, l1: float, **params: float
) -> np.ndarray:
    """Minimise ``P`` for a C^1 loss over ``w = u - v``, ``u, v >= 0``, where ``l1 ||w||_1`` is the
    linear ``l1 sum(u + v)``: a smooth bound-constrained problem that L-BFGS-B solves to rounding."""
    n, d = x.shape

    def value_grad(uv: np.ndarray) -> tuple[float, np.ndarray]:
        w = uv[:d] - uv[d:]
        z = x @ w
        g = x.T @ _smooth_parts(z, y, loss, params)[0] / n + l2 * w
        value = loss_value(z, y, loss, **params).mean() + 0.5 * l2 * w @ w + l1 * uv.sum()
        return float(value), np.concatenate([g + l1, l1 - g])

    res = optimize.minimize(
        value_grad,
        np.zeros(2 * d),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * (2 * d),
        options={"maxiter": 100_000, "maxfun": 400_000, "ftol": 1e-16, "gtol": 1e-14, "maxcor": 30},
    )
    return np.asarray(res.x[:d] - res.x[d:])


# ------------------------------------------------------------------------------------------
# Squared loss on sparse data: scikit-learn Lasso / ElasticNet
# ------------------------------------------------------------------------------------------


def _identical_column_classes(x: sp.csr_matrix) -> np.ndarray:
    """Class label per column; columns with the same rows and values share a class."""
    csc = sp.csc_matrix(x)
    csc.sort_indices()
    keys: dict[tuple[bytes, bytes], int] = {}
    spans = zip(csc.indptr[:-1], csc.indptr[1:], strict=True)
    return np.array(
        [keys.setdefault((csc.indices[a:b].tobytes(), csc.data[a:b].tobytes()), len(keys)) for a, b in spans]
    )


def assert_supports_agree(
    x: sp.csr_matrix, y: np.ndarray, a: Certified, b: Certified, l2: float, l1: float
) -> tuple[np.ndarray, float]:
    """Compare the supports of two near-optimal squared-loss solutions, as far as certified.

    1. Gap-safe screening (Fercoq, Gramfort and Salmon, ICML 2015): the squared loss's dual is
       (1/n)-strongly concave, so the better dual point ``theta`` lies within
       ``rho = sqrt(2 n (P_min - D(theta)))`` of the optimal ``theta*``, and every optimum has
       ``w*_j = 0`` where ``|x_j.theta|/n + ||x_j|| rho/n < l1``. Both solutions must be exactly 0
       there; the other features are the candidates ``C``.
    2. Identical columns (a word and its lowercase form, always co-occurring) are merged into
       classes, their weights summed (``w~``): a Lasso optimum may split a class's weight in any
       same-sign way, so only ``w~`` is determined, and merging removes the rank deficiency that
       would leave only ``l2`` in the bound below (an elastic-net optimum splits evenly). For
       ``d = w - w*`` supported on ``C``, ``P(w) - P* >= (1/2)(||X d||^2 / n + l2 ||d||^2)`` and
       ``X d = X~ d~``, ``||d||^2 >= sum_c d~_c^2 / |c|``; hence ``||w~ - w~*|| <= sqrt(2 (P(w) - D) /
       mu)`` with ``mu = sigma_min(X~_C)^2 / n + l2 / max |c|``.
    3. A class may be in one support only if its weight there is at most ``r = r_a + r_b``:
       ``|w~_a - w~_b| <= r`` everywhere, so every weight above ``r`` is non-zero with the same sign
       in both.

    Returns ``b``'s merged weights and the radius ``r``.
    """
    n = y.size
    best = max(a, b, key=lambda c: c.lower)

    def gap(primal: float) -> float:
        # The values are sums over n rows in floating point, exact only to about 1e-12 relative:
        # a gap below that rounds to zero or below and would claim an exact optimum (a zero radius).
        return max(primal - best.lower, 0.0) + 1e-12 * max(abs(primal), abs(best.lower))

    rho = math.sqrt(2.0 * n * gap(min(a.primal, b.primal)))
    col_norm = np.sqrt(np.asarray(x.multiply(x).sum(axis=0)).ravel())
    screened = np.abs(x.T @ best.alpha) / n + col_norm * rho / n < l1
    assert not np.any(a.w[screened]), "non-zero weights on features the gap-safe rule proves zero"
    assert not np.any(b.w[screened])
    cls = _identical_column_classes(x)
    wa, wb = (np.bincount(cls, weights=c.w) for c in (a, b))
    candidates = np.unique(cls[~screened])
    first, size = np.unique(cls, return_index=True, return_counts=True)[1:]
    sigma = np.linalg.svd(x[:, first[candidates]].toarray(), compute_uv=False).min()
    mu = sigma**2 / n + l2 / size[candidates].max()
    assert mu > 0, "the candidate classes are linearly dependent: no certified coefficient radius"
    radius = sum(math.sqrt(2.0 * gap(c.primal) / mu) for c in (a, b))
    assert np.linalg.norm(wa - wb) <= radius
    only_one = (wa != 0) != (wb != 0)
    assert np.all(np.abs(wa[only_one]) + np.abs(wb[only_one]) <= radius)
    big = np.abs(wa) > radius
    assert np.array_equal(np.sign(wa[big]), np.sign(wb[big]))
    return wb, radius


@pytest.fixture(scope="module")
def conll_xy(conll_tokens: tuple[pl.DataFrame, int]) -> tuple[sp.csr_matrix, np.ndarray]:
    from polars_sdca.datasets import sparse_to_scipy

    frame, n_features = conll_tokens
    return sparse_to_scipy(frame, n_features=n_features), frame["is_entity"].to_numpy().astype(float)


@pytest.mark.slow
@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
def test_sparse_lasso_and_elastic_net_match_sklearn(
    conll_tokens: tuple[pl.DataFrame, int], conll_xy: tuple[sp.csr_matrix, np.ndarray], l1_ratio: float
) -> None:
    """20,000 CoNLL-2003 tokens, sparse attributes (unit-norm rows), target is_entity (+-1).

    scikit-learn's ElasticNet minimises (1/2n)||y - Xw||^2 + a r ||w||_1 + (a (1 - r)/2)||w||^2,
    our squared loss with l1 = a r and l2 = a (1 - r); Lasso is r = 1 (our l2 = 0: the reduction
    of Shalev-Shwartz & Zhang 2012 section 3.2). l1 = 0.003 lambda_max, where
    lambda_max = ||X^T y||_inf / n is the smallest l1 with w* = 0, gives a support of a few dozen
    features out of ~24,000.
    """
    from sklearn.linear_model import ElasticNet, Lasso

    frame, n_features = conll_tokens
    x, y = conll_xy
    n = y.size
    l1 = 0.003 * np.abs(x.T @ y).max() / n
    l2 = l1 * (1.0 - l1_ratio) / l1_ratio
    tol = 1e-10
    model = fit_model(
        frame,
        "features",
        label="is_entity",
        loss="squared",
        l1=l1,
        l2=l2,
        tol=tol,
        max_epochs=100_000,
        fit_intercept=False,
        n_features=n_features,
    )
    sk = (
        Lasso(alpha=l1, fit_intercept=False, tol=1e-12, max_iter=100_000)
        if l1_ratio == 1.0
        else ElasticNet(alpha=l1 + l2, l1_ratio=l1_ratio, fit_intercept=False, tol=1e-12, max_iter=100_000)
    ).fit(x, y)
    ours = certify(x, y, np.asarray(model["coef"]), "squared", l2, l1)
    ref = certify(x, y, sk.coef_, "squared", l2, l1)
    lower = max(ours.lower, ref.lower)
    assert ref.primal - lower <= 1e-9 * ref.primal, f"scikit-learn not certified: gap {ref.gap:.2e}"
    assert abs(ours.primal - ref.primal) <= 1e-6 * ref.primal
    assert ours.primal - lower <= tol * ours.primal
    merged, radius = assert_supports_agree(x, y, ours, ref, l2, l1)
    support = np.abs(merged[merged != 0])
    assert 10 < support.size < 200
    # Nearly every weight of the support is certified non-zero in both (at tol = 1e-10, the
    # smallest ones can sit within the certified radius: coordinate descent's extrapolated dual
    # certifies tol with a primal no better than tol).
    assert (support > radius).mean() >= 0.95

    # Our certificate is about the original problem, and consistent with the reference.
    assert model["converged"]
    assert model["primal"] == pytest.approx(ours.primal, rel=1e-9)
    assert 0.0 <= model["gap"] <= tol * model["primal"]
    assert model["primal"] - model["gap"] <= ref.primal * (1 + 1e-12)
    assert model["solved_gap"] >= 0.0
    # solver="auto" runs coordinate descent for the squared loss with an L1 penalty when l2 = 0
    # or d >= n; it solves the Lasso as it is (no reduction): the problem solved is the user's.
    assert x.shape[1] >= n
    assert model["solver"] == "cd"
    assert model["l2_used"] == l2
    assert model["solved_gap"] == model["gap"]


# ------------------------------------------------------------------------------------------
# Classification losses with L1 + L2 on breast_cancer
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["sdca", "accelerated"])  # every solver for smooth losses with l1
@pytest.mark.parametrize("loss", ["logistic", "smooth_hinge"])
def test_l1_l2_classification_matches_reference(breast_cancer: pl.DataFrame, loss: str, solver: str) -> None:
    """breast_cancer (569 x 30, standardised), l2 = 1e-3, l1 = 1e-2 (12 of 30 weights non-zero).

    logistic: LogisticRegression(solver="saga", C, l1_ratio) minimises
    C sum log-loss + ((1 - r)/2)||w||^2 + r ||w||_1; divided by C n that is P with
    l2 = (1 - r)/(C n) and l1 = r/(C n), so C = 1/(n (l1 + l2)) and r = l1/(l1 + l2).
    smooth_hinge (smoothing 1): :func:`split_lbfgsb`. Both certified by their own gap.
    """
    from sklearn.linear_model import LogisticRegression

    l2, l1 = 1e-3, 1e-2
    params = {"smoothing": 1.0} if loss == "smooth_hinge" else {}
    x, y = dense_xy(breast_cancer)
    n = y.size
    if loss == "logistic":
        saga = LogisticRegression(
            C=1.0 / (n * (l1 + l2)),
            l1_ratio=l1 / (l1 + l2),
            solver="saga",
            fit_intercept=False,
            tol=1e-8,
            max_iter=100_000,
        )
        w_ref = saga.fit(x, y).coef_.ravel()
    else:
        w_ref = split_lbfgsb(x, y, loss, l2, l1, **params)
    ref = certify(x, y, w_ref, loss, l2, l1, **params)
    assert ref.gap <= 1e-9 * ref.primal, f"reference not certified: gap {ref.gap:.2e}"

    features = [c for c in breast_cancer.columns if c.startswith("f")]
    model = fit_model(
        breast_cancer,
        features,
        loss=loss,
        l2=l2,
        l1=l1,
        tol=1e-9,
        max_epochs=100_000,
        fit_intercept=False,
        solver=solver,
        **params,
    )
    assert model["solver"] == solver
    ours = certify(x, y, np.asarray(model["coef"]), loss, l2, l1, **params)
    assert model["converged"]
    assert abs(ours.primal - ref.primal) <= 1e-5 * ref.primal
    assert model["primal"] == pytest.approx(ours.primal, rel=1e-9)
    assert model["primal"] - model["gap"] <= ref.primal * (1 + 1e-12)
    # l2-strong convexity: each point is within sqrt(2 gap / l2) of the unique optimum.
    radius = sum(math.sqrt(2.0 * max(c.primal - max(ours.lower, ref.lower), 0.0) / l2) for c in (ours, ref))
    assert np.abs(ours.w - ref.w).max() <= radius
    big = np.abs(ref.w) > radius
    assert 5 < np.count_nonzero(big) < 25
    assert np.array_equal(np.sign(ours.w[big]), np.sign(ref.w[big]))


# ------------------------------------------------------------------------------------------
# Accelerated and plain Prox-SDCA on sparse data
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_accelerated_and_plain_reach_the_same_sparse_optimum(
    conll_tokens: tuple[pl.DataFrame, int], conll_xy: tuple[sp.csr_matrix, np.ndarray]
) -> None:
    """smooth_hinge (smoothing 1), l1 = 1e-5, l2 = 1e-6 on the sparse CoNLL tokens: the setting of
    Shalev-Shwartz & Zhang 2014 Figure 3, where R^2/(gamma l2) = 1e6 > n = 20,000 allows
    acceleration. Both optima agree within the sum of their certified gaps."""
    frame, n_features = conll_tokens
    x, y = conll_xy
    l2, l1 = 1e-6, 1e-5
    opts = {
        "label": "is_entity",
        "loss": "smooth_hinge",
        "smoothing": 1.0,
        "l2": l2,
        "l1": l1,
        "tol": 1e-7,
        "max_epochs": 10_000,
        "fit_intercept": False,
        "n_features": n_features,
        "seed": 3,
    }
    acc = fit_model(frame, "features", solver="accelerated", **opts)
    plain = fit_model(frame, "features", solver="sdca", **opts)
    assert (acc["solver"], plain["solver"]) == ("accelerated", "sdca")
    assert acc["converged"]
    assert plain["converged"]
    fits = [certify(x, y, np.asarray(m["coef"]), "smooth_hinge", l2, l1, smoothing=1.0) for m in (acc, plain)]
    for model, cert in zip((acc, plain), fits, strict=True):
        assert model["primal"] == pytest.approx(cert.primal, rel=1e-9)
        # each certified lower bound lies below both primal values
        assert model["primal"] - model["gap"] <= min(c.primal for c in fits) * (1 + 1e-12)
        assert max(c.lower for c in fits) <= cert.primal
    assert abs(fits[0].primal - fits[1].primal) <= acc["gap"] + plain["gap"]
    distance = np.linalg.norm(fits[0].w - fits[1].w)
    assert distance <= math.sqrt(2 * acc["gap"] / l2) + math.sqrt(2 * plain["gap"] / l2)
    assert acc["epochs"] < plain["epochs"]
