"""Tests of the reference solvers in ``tests/references.py``.

The references are what the rest of the suite trusts, so they are checked here against facts
that do not depend on any solver: the definitions of the losses and of their conjugates (by
brute-force minimisation), weak duality, the Fenchel-Young inequality per row, the normal
equations, scikit-learn's objectives under the DESIGN section 3 mapping, and the identity
"weight 2 == the row twice".
"""

from __future__ import annotations

import math
import warnings
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import scipy.sparse as sp

import references as R

FloatArray = npt.NDArray[np.float64]

MARGIN = ("hinge", "smooth_hinge", "squared_hinge", "logistic")
REGRESSION = ("squared", "absolute", "epsilon_insensitive", "quantile")
PARAMS: dict[str, dict[str, float]] = {
    "smooth_hinge": {"smoothing": 0.5},
    "epsilon_insensitive": {"epsilon": 0.1},
    "quantile": {"tau": 0.3},
}
L2S = (1e-2, 1e-4)
RTOL = 1e-9


def params(loss: str) -> dict[str, float]:
    return PARAMS.get(loss, {})


@cache
def dataset(name: str, task: str) -> tuple[Any, FloatArray]:
    """breast_cancer (standardised, labels -1/+1, also used as regression targets) or a
    random sparse problem (2000 x 400, 8 non-zeros a row, unit-norm rows)."""
    if name == "breast_cancer":
        return R.breast_cancer_pm1()
    if task == "classification":
        return R.make_sparse_problem(2000, 400, 8, seed=3)
    return R.make_sparse_problem(2000, 400, 8, task="regression", noise=0.3, seed=4)


def data_for(name: str, loss: str) -> tuple[Any, FloatArray]:
    return dataset(name, "classification" if loss in MARGIN else "regression")


@cache
def reference(name: str, loss: str, l2: float) -> R.Reference:
    X, y = data_for(name, loss)
    return R.reference_optimum(X, y, loss, l2, max_seconds=60, **params(loss))


def dense(X: Any) -> FloatArray:
    return np.asarray(X.toarray() if sp.issparse(X) else X)


# ------------------------------------------------------------------------------------------
# Losses and conjugates
# ------------------------------------------------------------------------------------------


def test_loss_values_by_hand() -> None:
    z = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    y = np.ones(5)
    assert np.allclose(R.loss_value(z, y, "hinge"), [2, 1, 0.5, 0, 0])
    assert np.allclose(R.loss_value(z, y, "squared_hinge"), [4, 1, 0.25, 0, 0])
    # gamma = 1: linear below m = 0, quadratic on [0, 1]
    assert np.allclose(R.loss_value(z, y, "smooth_hinge"), [1.5, 0.5, 0.125, 0, 0])
    assert np.allclose(R.loss_value(z, y, "logistic"), np.log1p(np.exp(-z)))
    assert np.allclose(R.loss_value(z, -y, "logistic"), np.log1p(np.exp(z)))
    t = np.array([0.0, 0.0, 1.0, 3.0, 2.0])
    assert np.allclose(R.loss_value(z, t, "squared"), 0.5 * (z - t) ** 2)
    assert np.allclose(R.loss_value(z, t, "absolute"), np.abs(z - t))
    assert np.allclose(R.loss_value(z, t, "epsilon_insensitive", epsilon=0.6), [0.4, 0, 0, 1.4, 0])
    assert np.allclose(R.loss_value(z, t, "quantile", tau=0.3), [0.3, 0, 0.15, 0.6, 0])
    # extreme margins stay finite
    assert np.isfinite(R.loss_value(np.array([-800.0]), np.ones(1), "logistic")).all()


def grid_neg_conjugate(alpha: float, y: float, loss: str) -> float:
    """``-phi*(-alpha) = inf_a phi(a) + alpha a`` by brute force on a grid holding the kinks."""
    a = np.unique(np.concatenate([np.linspace(-6, 6, 240001), [-1.0, 0.0, 1.0, 0.5, y]]))
    a = np.concatenate([a, y + np.array([-0.1, 0.1]), y + 1 - np.array([0.5])])
    vals = R.loss_value(a, np.full(a.size, y), loss, **params(loss)) + alpha * a
    return float(vals.min())


@pytest.mark.parametrize("loss", R.LOSSES)
def test_neg_conjugate_equals_brute_force_infimum(loss: str) -> None:
    rng = np.random.default_rng(0)
    for _ in range(12):
        if loss in MARGIN:
            y = float(rng.choice([-1.0, 1.0]))
            hi = 3.0 if loss == "squared_hinge" else 1.0
            b = float(rng.uniform(0.0, hi))
            alpha = b * y
        else:
            y = float(rng.uniform(-1.5, 1.5))
            lo, hi = (-0.7, 0.3) if loss == "quantile" else (-1.0, 1.0)
            alpha = float(rng.uniform(lo, hi) if loss != "squared" else rng.normal())
        got = float(R.neg_conjugate(np.array([alpha]), np.array([y]), loss, **params(loss))[0])
        want = grid_neg_conjugate(alpha, y, loss)
        # grid spacing 5e-5: a quadratic minimum is missed by at most curvature * h^2
        assert got == pytest.approx(want, abs=1e-7), (alpha, y)


@pytest.mark.parametrize("loss", [x for x in R.LOSSES if x != "squared"])
def test_infeasible_dual_is_minus_inf(loss: str) -> None:
    X, y = data_for("breast_cancer", loss)
    n = X.shape[0]
    lo, hi = {"quantile": (-0.7, 0.3), "squared_hinge": (0.0, math.inf)}.get(loss, (-1.0, 1.0))
    if loss in MARGIN:
        lo = 0.0
    bad = np.zeros(n)
    bad[0] = (lo - 0.5) if loss in MARGIN or math.isfinite(lo) else hi + 0.5
    bad = bad * (y if loss in MARGIN else 1.0)
    assert R.dual(X, y, bad, loss, 1e-2, **params(loss)) == -math.inf
    # a tiny overshoot is accepted only with atol, and then projected
    edge = np.zeros(n)
    edge[0] = (lo - 1e-13) * (y[0] if loss in MARGIN else 1.0)
    assert R.dual(X, y, edge, loss, 1e-2, **params(loss)) == -math.inf
    assert math.isfinite(R.dual(X, y, edge, loss, 1e-2, atol=1e-12, **params(loss)))


def random_feasible_alpha(loss: str, y: FloatArray, rng: np.random.Generator) -> FloatArray:
    n = y.size
    if loss in MARGIN:
        hi = 3.0 if loss == "squared_hinge" else 1.0
        return y * rng.uniform(0.0, hi, n)
    if loss == "squared":
        return rng.normal(size=n)
    lo, hi = (-0.7, 0.3) if loss == "quantile" else (-1.0, 1.0)
    return rng.uniform(lo, hi, n)


@pytest.mark.parametrize("loss", R.LOSSES)
def test_fenchel_young_rows_and_gap_identity(loss: str) -> None:
    X, y = data_for("sparse", loss)
    rng = np.random.default_rng(1)
    s = rng.uniform(0.5, 2.0, y.size)
    alpha = random_feasible_alpha(loss, y, rng)
    w = R.dual_weights(X, alpha, 1e-2, s)
    gaps = R.block_gaps(X, y, w, alpha, loss, **params(loss))
    assert gaps.min() >= -1e-12
    # the s-weighted mean of the per-row gaps is P(w(alpha)) - D(alpha)
    total = R.primal(X, y, w, loss, 1e-2, s, **params(loss)) - R.dual(
        X, y, alpha, loss, 1e-2, s, **params(loss)
    )
    assert float(np.dot(s, gaps)) / y.size == pytest.approx(total, rel=1e-10, abs=1e-12)
    # any w gives a per-row gap >= 0 too
    gaps2 = R.block_gaps(X, y, rng.normal(size=X.shape[1]), alpha, loss, **params(loss))
    assert gaps2.min() >= -1e-12


# ------------------------------------------------------------------------------------------
# Certified references
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("l2", L2S)
@pytest.mark.parametrize("loss", R.LOSSES)
@pytest.mark.parametrize("name", ["breast_cancer", "sparse"])
def test_reference_is_certified(name: str, loss: str, l2: float) -> None:
    X, y = data_for(name, loss)
    ref = reference(name, loss, l2)
    assert ref.certified
    assert ref.gap <= RTOL * max(1.0, ref.primal)
    # both bounds recomputed from scratch by the public functions
    assert R.primal(X, y, ref.w, loss, l2, **params(loss)) == ref.primal
    assert R.dual(X, y, ref.alpha, loss, l2, **params(loss)) == ref.lower_bound
    assert ref.primal >= ref.lower_bound - 1e-14 * max(1.0, ref.primal)
    # Fenchel-Young per row at the certificate, and its mean is the gap at w(alpha)
    w_alpha = R.dual_weights(X, ref.alpha, l2)
    rows = R.block_gaps(X, y, w_alpha, ref.alpha, loss, **params(loss))
    assert rows.min() >= -1e-12
    gap_alpha = R.primal(X, y, w_alpha, loss, l2, **params(loss)) - ref.lower_bound
    assert float(rows.mean()) == pytest.approx(gap_alpha, abs=1e-12)
    # both primal points lie in the certified ball around w*
    assert np.linalg.norm(ref.w - w_alpha) <= 2 * ref.distance_bound(l2) + math.sqrt(
        2 * max(gap_alpha, 0) / l2
    )
    # random directions never go below the certified lower bound
    rng = np.random.default_rng(2)
    for _ in range(5):
        w = ref.w + 1e-3 * rng.normal(size=ref.w.size)
        assert R.primal(X, y, w, loss, l2, **params(loss)) >= ref.lower_bound


@pytest.mark.parametrize("l2", L2S)
@pytest.mark.parametrize("name", ["breast_cancer", "sparse"])
def test_ridge_equals_numpy_solve(name: str, l2: float) -> None:
    # n P(w) = sum (x.w - y)^2 / 2 + (l2 n / 2)||w||^2  =>  (X^T X + l2 n I) w = X^T y
    X, y = data_for(name, "squared")
    A = dense(X)
    n, d = A.shape
    w = np.linalg.solve(A.T @ A + l2 * n * np.eye(d), A.T @ y)
    ref = reference(name, "squared", l2)
    assert np.allclose(ref.w, w, rtol=1e-10, atol=1e-12)
    # and scikit-learn's Ridge with alpha = l2 n (DESIGN section 3)
    from sklearn.linear_model import Ridge

    coef = Ridge(alpha=l2 * n, fit_intercept=False, solver="cholesky").fit(A, y).coef_
    assert np.allclose(ref.w, coef, rtol=1e-8, atol=1e-10)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("l2", L2S)
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "logistic"])
@pytest.mark.parametrize("name", ["breast_cancer", "sparse"])
def test_reference_not_worse_than_sklearn(name: str, loss: str, l2: float) -> None:
    # C = 1/(l2 n) maps scikit-learn's objective onto P (DESIGN section 3). The reference must
    # be at least as good, and sklearn's value can never beat the certified lower bound.
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    X, y = data_for(name, loss)
    C = 1.0 / (l2 * X.shape[0])
    model: Any
    if loss == "logistic":
        model = LogisticRegression(C=C, fit_intercept=False)
    else:
        model = LinearSVC(loss=loss, C=C, fit_intercept=False, dual=True)
    w = model.fit(X, y).coef_.ravel()
    ref = reference(name, loss, l2)
    p_sk = R.primal(X, y, w, loss, l2)
    assert p_sk >= ref.lower_bound
    assert ref.primal <= p_sk + 1e-12


@pytest.mark.parametrize("l2", L2S)
@pytest.mark.parametrize("loss", R.LOSSES)
def test_weight_two_equals_duplicated_rows(loss: str, l2: float) -> None:
    X, y = data_for("breast_cancer", loss)
    n = X.shape[0]
    twice = np.arange(0, n, 3)
    s = np.ones(n)
    s[twice] = 2.0
    Xd = np.vstack([X, X[twice]])
    yd = np.concatenate([y, y[twice]])
    nd = Xd.shape[0]
    l2d = l2 * n / nd  # (1/nd) sum phi + (l2d/2)||w||^2 == (n/nd) P_s(w)
    rng = np.random.default_rng(5)
    w = rng.normal(size=X.shape[1]) * 0.1
    pw = R.primal(X, y, w, loss, l2, s, **params(loss))
    assert R.primal(Xd, yd, w, loss, l2d, **params(loss)) == pytest.approx(pw * n / nd, rel=1e-13)
    alpha = random_feasible_alpha(loss, y, rng)
    dw = R.dual(X, y, alpha, loss, l2, s, **params(loss))
    alpha_d = np.concatenate([alpha, alpha[twice]])
    assert R.dual(Xd, yd, alpha_d, loss, l2d, **params(loss)) == pytest.approx(dw * n / nd, rel=1e-12)
    ref_s = R.reference_optimum(X, y, loss, l2, s, **params(loss))
    ref_d = R.reference_optimum(Xd, yd, loss, l2d, **params(loss))
    assert ref_d.primal == pytest.approx(ref_s.primal * n / nd, abs=ref_d.gap + ref_s.gap + 1e-14)
    radius = ref_s.distance_bound(l2) + ref_d.distance_bound(l2d)
    assert np.linalg.norm(ref_s.w - ref_d.w) <= radius + 1e-12


def test_sparse_path_without_interior_point(monkeypatch: pytest.MonkeyPatch) -> None:
    # The large-problem path (L-BFGS-B on the dual, then coordinate sweeps vectorised over
    # rows with disjoint supports) certifies on its own too.
    monkeypatch.setattr(R, "_IPM_GRAM_LIMIT", 0)
    monkeypatch.setattr(R, "_IPM_WOODBURY_LIMIT", 0)
    for loss in ("hinge", "squared_hinge", "absolute", "epsilon_insensitive"):
        X, y = data_for("sparse", loss)
        ref = R.reference_optimum(X, y, loss, 1e-3, **params(loss))
        assert "L-BFGS-B" in ref.method or ref.method.startswith("LinearSVC start -> start")
        ipm = reference("sparse", loss, 1e-2)  # different l2: only a smoke comparison
        assert ipm.certified
        assert ref.certified
        assert ref.gap <= RTOL * max(1.0, ref.primal)


def test_row_classes_are_disjoint_and_sweeps_are_sequential() -> None:
    X, y = data_for("sparse", "hinge")
    classes = R._independent_row_classes(X, seed=0)
    seen = np.concatenate([c.rows for c in classes])
    assert np.array_equal(np.sort(seen), np.arange(X.shape[0]))
    for c in classes:
        assert np.unique(c.indices).size == c.indices.size
    # a vectorised sweep equals the row-by-row sweep in the same order
    prob = R._Problem(X, y, "hinge", 1e-3, None, 0)
    spec = R._quad_spec("hinge", prob.y, R._params("hinge", {}))
    beta = np.random.default_rng(0).uniform(0, 1, X.shape[0])
    b1, b2 = beta.copy(), beta.copy()
    w1 = prob.w_of(spec.alpha(b1))
    w2 = w1.copy()
    R._sweep_sparse(prob, spec, b1, w1, np.random.default_rng(7))
    order = np.random.default_rng(7).permutation(len(classes))
    Xd = dense(X)
    q = prob.sqnorm / prob.scale
    for ci in order:
        for i in classes[ci].rows:
            m = y[i] * (Xd[i] @ w2)
            new = min(max(b2[i] + (1 - m) / q[i], 0.0), 1.0)
            w2 += (y[i] * (new - b2[i]) / prob.scale) * Xd[i]
            b2[i] = new
    assert np.allclose(b1, b2, atol=1e-12)
    assert np.allclose(w1, w2, atol=1e-12)


def test_strict_raises_and_lenient_reports() -> None:
    X, y = data_for("sparse", "absolute")
    with pytest.raises(R.CertificationError, match="certified gap"):
        R.reference_optimum(X, y, "absolute", 1e-4, max_seconds=0.0)
    ref = R.reference_optimum(X, y, "absolute", 1e-4, max_seconds=0.0, strict=False)
    assert not ref.certified
    assert ref.primal >= ref.lower_bound


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"loss": "hinge", "y": "bad"}, ValueError),
        ({"loss": "nope"}, ValueError),
        ({"loss": "hinge", "l2": 0.0}, ValueError),
        ({"loss": "hinge", "epsilon": 0.1}, TypeError),
        ({"loss": "smooth_hinge", "smoothing": -1.0}, ValueError),
    ],
)
def test_bad_input(kwargs: dict[str, Any], error: type[Exception]) -> None:
    X, y = data_for("breast_cancer", "hinge")
    args: dict[str, Any] = {"l2": 1e-2, **kwargs}
    if args.pop("y", None) == "bad":
        y = (y + 1) / 2  # {0, 1}
    with pytest.raises(error):
        R.reference_optimum(X, y, **args)


# ------------------------------------------------------------------------------------------
# L1-penalised linear programs
# ------------------------------------------------------------------------------------------

LP_LOSSES = ("hinge", "absolute", "epsilon_insensitive", "quantile")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("l1", [1e-2, 1e-3])
@pytest.mark.parametrize("loss", LP_LOSSES)
@pytest.mark.parametrize("name", ["breast_cancer", "sparse"])
def test_lp_optimum_l1(name: str, loss: str, l1: float) -> None:
    from sklearn.linear_model import QuantileRegressor, SGDClassifier, SGDRegressor

    X, y = data_for(name, loss)
    lp = R.lp_optimum_l1(X, y, loss, l1, **params(loss))
    assert lp.gap <= RTOL * max(1.0, lp.value)
    assert lp.value == pytest.approx(lp.lp_value, abs=1e-9)
    rng = np.random.default_rng(6)
    d = X.shape[1]

    def objective(w: FloatArray) -> float:
        return R.primal(X, y, w, loss, 0.0, l1=l1, **params(loss))

    # weak duality: the certified lower bound is below every objective value; the LP value is
    # the optimum up to the certified gap
    assert lp.lower_bound <= lp.value
    assert lp.value <= objective(np.zeros(d)) + lp.gap
    for scale in (1e-3, 1e-2, 1e-1, 1.0):
        for _ in range(5):
            assert lp.value <= objective(lp.w + scale * rng.normal(size=d)) + lp.gap
            assert lp.value <= objective(scale * rng.normal(size=d)) + lp.gap
    # scikit-learn solutions of the same objective
    if loss in ("quantile", "absolute"):
        # absolute = 2 * pinball(0.5): same minimiser with alpha = l1 / 2
        tau, alpha = (0.3, l1) if loss == "quantile" else (0.5, l1 / 2)
        qr = QuantileRegressor(quantile=tau, alpha=alpha, fit_intercept=False)
        w_sk = qr.fit(X, y).coef_
        assert lp.lower_bound <= objective(w_sk)
        assert objective(w_sk) == pytest.approx(lp.value, rel=1e-7)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if loss == "hinge":
                sgd: Any = SGDClassifier(loss="hinge", penalty="l1", alpha=l1, random_state=0)
            else:
                sgd = SGDRegressor(
                    loss="epsilon_insensitive", epsilon=0.1, penalty="l1", alpha=l1, random_state=0
                )
            sgd.set_params(fit_intercept=False, max_iter=50, tol=None)
            w_sk = sgd.fit(X, y).coef_.ravel()
        assert lp.lower_bound <= objective(w_sk)
        assert lp.value <= objective(w_sk) + lp.gap


def test_lp_weights_equal_duplicated_rows() -> None:
    X, y = data_for("breast_cancer", "hinge")
    n = X.shape[0]
    twice = np.arange(0, n, 4)
    s = np.ones(n)
    s[twice] = 2.0
    Xd, yd = np.vstack([X, X[twice]]), np.concatenate([y, y[twice]])
    nd = Xd.shape[0]
    a = R.lp_optimum_l1(X, y, "hinge", 1e-2, s)
    b = R.lp_optimum_l1(Xd, yd, "hinge", 1e-2 * n / nd)
    assert b.value == pytest.approx(a.value * n / nd, abs=1e-10)


# ------------------------------------------------------------------------------------------
# The large sparse problem (about 1 minute in total)
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("loss", R.LOSSES)
def test_large_sparse_problem(loss: str) -> None:
    # 200,000 x 70,000, 12 non-zeros a row, unit-norm rows, l2 = 1e-4
    if loss in MARGIN:
        X, y = R.make_sparse_problem(200_000, 70_000, 12, seed=1)
    else:
        X, y = R.make_sparse_problem(200_000, 70_000, 12, task="regression", seed=1)
    ref = R.reference_optimum(X, y, loss, 1e-4, max_seconds=300, **params(loss))
    assert ref.certified
    assert ref.gap <= RTOL * max(1.0, ref.primal)
