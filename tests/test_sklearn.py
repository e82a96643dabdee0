"""scikit-learn estimators (`polars_sdca.sklearn`): the API checks, parity with the plugin, and
scikit-learn's own objectives at the same C on real data.

Reference values are never read from our models: objectives are recomputed with
`references.primal`, and optima are certified by `references.reference_optimum` (DATA.md).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp
from polars.exceptions import ComputeError
from sklearn.datasets import load_diabetes, load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import (
    check_sample_weight_equivalence_on_dense_data,
    check_sample_weight_equivalence_on_sparse_data,
    parametrize_with_checks,
)

import polars_sdca as ps
from polars_sdca.sklearn import SDCAClassifier, SDCARegressor

import references as R

# ------------------------------------------------------------------------------------------
# scikit-learn's estimator checks
# ------------------------------------------------------------------------------------------


# The sample-weight equivalence checks compare predictions at rtol 1e-7, which needs the optimum
# to about 1e-8: below what tol=1e-6 certifies in general (||w - w*|| <= sqrt(2 gap / l2)). The
# default estimators pass them because `auto` runs Newton on these small sets, which converges
# quadratically far past tol; plain SDCA is held to the same property near machine precision in
# test_sample_weight_equivalence_near_machine_precision.
#
# The checks fit small unscaled synthetic sets (for example X ~ N(100, 1)) at the default
# l2 = 1e-4, where a solver that stops at max_epochs warns with a ConvergenceWarning (the
# documented outcome, tested in test_unconverged_fit_warns). They check the API; accuracy is
# checked below.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks([SDCAClassifier(), SDCARegressor()], xfail_strict=True)
def test_sklearn_api_checks(estimator: Any, check: Any) -> None:
    check(estimator)


@pytest.mark.parametrize(
    "check", [check_sample_weight_equivalence_on_dense_data, check_sample_weight_equivalence_on_sparse_data]
)
@pytest.mark.parametrize(
    "estimator",
    [
        SDCAClassifier(l2=1e-2, tol=1e-15, max_epochs=3000, check_every=3000, solver="sdca"),
        SDCAClassifier(C=1.0, tol=1e-15, max_epochs=3000, check_every=3000, solver="sdca"),
        SDCAClassifier(C=1.0, loss="hinge", tol=1e-12, max_epochs=5000),
        SDCARegressor(l2=1e-2, tol=1e-15, max_epochs=3000, check_every=3000, solver="sdca"),
        SDCARegressor(C=1.0, loss="absolute", tol=1e-12, max_epochs=5000),
    ],
    ids=repr,
)
def test_sample_weight_equivalence_near_machine_precision(estimator: Any, check: Any) -> None:
    # Smooth losses: a fixed 3,000 epochs of plain SDCA (one gap check, at the end), where
    # w = w(alpha) has converged linearly with the duals to rounding. Stopping on the gap
    # instead is not precise enough: a gap that computes as 0 at rounding level (~1e-19 here)
    # still allows ||w - w*|| <= sqrt(2 gap / l2) ~ 1e-8, the size of the check's tolerance.
    check(type(estimator).__name__, estimator)


# ------------------------------------------------------------------------------------------
# The estimators are the plugin
# ------------------------------------------------------------------------------------------


def _plugin_fit(X: np.ndarray, y: np.ndarray, **options: Any) -> pl.Series:
    """The plugin's model for (X, y) as a one-row Struct Series (which keeps every field's dtype)."""
    frame = pl.DataFrame([pl.Series("X", X), pl.Series("y", y)])
    return frame.select(ps.fit("y", "X", **options).alias("m")).to_series()


def _plugin_model(X: np.ndarray, y: np.ndarray, **options: Any) -> dict[str, Any]:
    model: dict[str, Any] = _plugin_fit(X, y, **options)[0]
    return model


def _plugin_predict(model: pl.Series, X: np.ndarray, kind: str = "decision") -> pl.Series:
    return pl.DataFrame([pl.Series("X", X)]).select(ps.predict(model, "X", kind=kind)).to_series()


def _iris() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_iris(return_X_y=True)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


BINARY_LOSSES = {
    "hinge": {},
    "smooth_hinge": {"smoothing": 0.5},
    "squared_hinge": {},
    "logistic": {},
    "squared": {},
    # SDCA is sublinear on these Lipschitz losses: a stronger l2 certifies tol in < 500 epochs
    "absolute": {"l2": 0.1},
    "epsilon_insensitive": {"epsilon": 0.1, "l2": 0.1},
}


@pytest.mark.parametrize("loss", BINARY_LOSSES)
def test_classifier_is_the_plugin_fit(loss: str) -> None:
    X, y = R.breast_cancer_pm1()
    options: dict[str, Any] = {"loss": loss, "l2": 1e-2, **BINARY_LOSSES[loss]}
    clf = SDCAClassifier(**options).fit(X, y)
    fitted = _plugin_fit(X, y, **options)
    model = fitted[0]
    assert clf.coef_[0].tolist() == model["coef"]
    assert clf.intercept_.tolist() == [model["intercept"]]
    assert clf.n_iter_.tolist() == [model["epochs"]]
    assert clf.duality_gap_.tolist() == [model["gap"]]
    decision = _plugin_predict(fitted, X).to_numpy()
    assert np.array_equal(clf.decision_function(X), decision)
    assert np.array_equal(clf.predict(X), np.where(decision > 0, 1.0, -1.0))


@pytest.mark.parametrize(
    "options", [{"solver": "accelerated", "l2": 1e-4}, {"l1": 1e-3}, {"sampling": "uniform", "seed": 7}]
)
def test_classifier_passes_solver_options(options: dict[str, Any]) -> None:
    X, y = R.breast_cancer_pm1()
    seed = options.pop("seed", None)
    clf = SDCAClassifier(**options, random_state=seed).fit(X, y)
    model = _plugin_model(X, y, **options, **({} if seed is None else {"seed": seed}))
    assert clf.coef_[0].tolist() == model["coef"]
    assert clf.models_["model"].struct.field("solver")[0] == model["solver"]


@pytest.mark.parametrize("loss", ["squared", "absolute", "epsilon_insensitive"])
def test_regressor_is_the_plugin_fit(loss: str) -> None:
    X, y = load_diabetes(return_X_y=True)
    y = (y - y.mean()) / y.std()
    reg = SDCARegressor(loss=loss, l2=1e-2).fit(X, y)
    fitted = _plugin_fit(X, y, loss=loss, l2=1e-2)
    model = fitted[0]
    assert reg.coef_.tolist() == model["coef"]
    assert reg.intercept_ == model["intercept"]
    assert reg.n_iter_ == model["epochs"]
    assert np.array_equal(reg.predict(X), _plugin_predict(fitted, X).to_numpy())


def test_one_vs_rest_is_k_plugin_fits_in_one_query() -> None:
    X, y = _iris()
    clf = SDCAClassifier(l2=1e-2).fit(X, y)
    assert clf.coef_.shape == (3, 4)
    assert clf.models_["class"].to_list() == ["0", "1", "2"]
    for c in range(3):
        model = _plugin_model(X, np.where(y == c, 1.0, -1.0), l2=1e-2)
        assert clf.coef_[c].tolist() == model["coef"]
        assert clf.intercept_[c] == model["intercept"]
    decision = clf.decision_function(X)
    assert np.array_equal(clf.predict(X), decision.argmax(axis=1))
    proba = clf.predict_proba(X)
    sigmoid = 1.0 / (1.0 + np.exp(-decision))
    np.testing.assert_allclose(proba, sigmoid / sigmoid.sum(axis=1, keepdims=True), rtol=1e-12)
    assert clf.score(X, y) > 0.9


def test_binary_proba_is_the_plugin_proba() -> None:
    X, y = R.breast_cancer_pm1()
    clf = SDCAClassifier(l2=1e-3).fit(X, y)
    proba = clf.predict_proba(X)
    assert np.array_equal(proba[:, 1], _plugin_predict(_plugin_fit(X, y, l2=1e-3), X, "proba").to_numpy())
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-15)
    np.testing.assert_allclose(clf.predict_log_proba(X), np.log(proba))


def test_predict_proba_only_for_probabilistic_losses() -> None:
    assert hasattr(SDCAClassifier(loss="logistic"), "predict_proba")
    assert hasattr(SDCAClassifier(loss="multinomial"), "predict_proba")
    assert not hasattr(SDCAClassifier(loss="hinge"), "predict_proba")
    assert not hasattr(SDCAClassifier(loss="multiclass_hinge"), "predict_log_proba")


def _certified_distance(a: np.ndarray, gap_a: float, b: np.ndarray, gap_b: float, l2: float) -> None:
    """||a - b|| within the two certified radii sqrt(2 gap / l2) (l2-strong convexity)."""
    radius = math.sqrt(2 * gap_a / l2) + math.sqrt(2 * gap_b / l2)
    assert np.linalg.norm(a - b) <= radius


def test_numpy_sparse_and_polars_inputs_agree() -> None:
    from polars_sdca import datasets

    df = datasets.load_digits().filter(pl.col("y") < 3)
    features = [c for c in df.columns if c.startswith("f")]
    X, y = df.select(features).to_numpy(), df["y"].to_numpy()
    dense = SDCAClassifier(l2=1e-3).fit(X, y)
    csr = SDCAClassifier(l2=1e-3).fit(sp.csr_array(X), y)
    frame = SDCAClassifier(l2=1e-3).fit(df.select(features), df["y"])
    assert frame.feature_names_in_.tolist() == features
    for other in (csr, frame):
        for c in range(3):
            _certified_distance(
                np.r_[dense.coef_[c], dense.intercept_[c]],
                dense.duality_gap_[c],
                np.r_[other.coef_[c], other.intercept_[c]],
                other.duality_gap_[c],
                1e-3,
            )
        assert np.mean(other.predict(X if other is csr else df.select(features)) == dense.predict(X)) > 0.99
    # the DataFrame path reads the columns as they are: the plugin's list-of-columns fit
    model = df.with_columns(pl.col("y") == 0).select(
        ps.fit(pl.when("y").then(1.0).otherwise(-1.0), features, l2=1e-3).alias("m")
    )
    assert frame.coef_[0].tolist() == model.item()["coef"]
    # empty sparse rows (all-zero pixels are common) become empty lists
    assert np.array_equal(csr.predict(sp.csr_array(np.zeros((2, 64)))), dense.predict(np.zeros((2, 64))))


# ------------------------------------------------------------------------------------------
# scikit-learn's objectives at the same C, on real data (breast cancer, 569 x 30)
# ------------------------------------------------------------------------------------------

C = 1.0 / (1e-3 * 569)  # l2 = 1e-3 without weights


def _sklearn_model(loss: str, weighting: str) -> Any:
    class_weight = "balanced" if weighting == "balanced" else None
    if loss == "logistic":
        return LogisticRegression(
            C=C, solver="liblinear", tol=1e-10, max_iter=10_000, class_weight=class_weight
        )
    if loss == "hinge":
        return LinearSVC(C=C, loss="hinge", tol=1e-8, max_iter=200_000, class_weight=class_weight)
    return Ridge(alpha=1.0 / C, fit_intercept=False, solver="cholesky")


@pytest.mark.parametrize(
    ("loss", "weighting"),
    [
        ("logistic", "none"),
        ("logistic", "sample_weight"),
        ("logistic", "balanced"),
        ("hinge", "none"),
        ("hinge", "sample_weight"),
        ("squared", "none"),
        ("squared", "sample_weight"),
    ],
)
def test_objective_matches_sklearn_at_same_C(loss: str, weighting: str) -> None:
    """liblinear (LogisticRegression, LinearSVC) regularizes the intercept as a constant feature
    of value 1, exactly our treatment; Ridge leaves it out, so that case fits none. Objective
    C sum_i s_i phi + ||w||^2 / 2 is P(w) times C sum_i s_i in the plugin's scaling."""
    X, y = R.breast_cancer_pm1()
    n = y.size
    intercept = loss != "squared"
    s = 1.0 + np.arange(n) % 3 if weighting == "sample_weight" else None
    cls = SDCARegressor if loss == "squared" else SDCAClassifier
    extra = {"class_weight": "balanced"} if weighting == "balanced" else {}
    ours = cls(loss=loss, C=C, fit_intercept=intercept, tol=1e-9, max_epochs=20_000, **extra)
    ours.fit(X, y, sample_weight=s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        theirs = _sklearn_model(loss, weighting).fit(X, y, sample_weight=s)

    # the same problem in the plugin's scaling: weights times class weights, rescaled to mean 1
    if weighting == "balanced":
        s = np.where(y > 0, n / (2 * (y > 0).sum()), n / (2 * (y < 0).sum()))
    total = n if s is None else float(s.sum())
    s_plugin = None if s is None else s * (n / total)
    l2 = 1.0 / (C * total)
    Xa = np.hstack([X, np.ones((n, 1))]) if intercept else X

    def weights(est: Any) -> np.ndarray:
        coef = np.ravel(est.coef_)
        return np.r_[coef, np.ravel(est.intercept_)] if intercept else coef

    ref = R.reference_optimum(Xa, y, loss, l2, s_plugin)
    p_ours = R.primal(Xa, y, weights(ours), loss, l2, s_plugin)
    p_theirs = R.primal(Xa, y, weights(theirs), loss, l2, s_plugin)
    assert (p_ours - ref.lower_bound) / ref.primal <= 1e-8, (p_ours, ref.primal)
    assert p_theirs >= ref.lower_bound - 1e-14 * ref.primal  # rounding of two evaluations
    # never worse than scikit-learn beyond our certified tolerance
    assert p_ours <= p_theirs + 1e-8 * p_ours, (p_ours, p_theirs)
    radius = math.sqrt(2 * max(p_ours - ref.lower_bound, 0.0) / l2) + ref.distance_bound(l2)
    assert np.linalg.norm(weights(ours) - ref.w) <= radius


# ------------------------------------------------------------------------------------------
# Joint multiclass losses (the plugin's multinomial / Crammer-Singer fits)
# ------------------------------------------------------------------------------------------


def _joint_objective(est: Any, X: np.ndarray, y: np.ndarray, loss: str) -> float:
    """scikit-learn's C sum_i loss_i + ||W||_F^2 / 2 (no intercept), from the coefficients."""
    scores = X @ np.asarray(est.coef_).T
    true = scores[np.arange(y.size), y]
    if loss == "multinomial":
        top = scores.max(axis=1)
        per_row = top + np.log(np.exp(scores - top[:, None]).sum(axis=1)) - true
    else:  # Crammer-Singer: max_r (1[r != y] + s_r - s_y)
        margins = 1.0 - (np.arange(scores.shape[1]) == y[:, None]) + scores - true[:, None]
        per_row = margins.max(axis=1)
    return float(C * per_row.sum() + 0.5 * np.sum(np.asarray(est.coef_) ** 2))


@pytest.mark.parametrize("loss", ["multinomial", "multiclass_hinge"])
def test_joint_multiclass_matches_sklearn_objective(loss: str) -> None:
    X, y = _iris()
    ours = SDCAClassifier(loss=loss, C=C, fit_intercept=False, tol=1e-10, max_epochs=20_000).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if loss == "multinomial":
            theirs = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=10_000).fit(X, y)
        else:
            theirs = LinearSVC(
                C=C, multi_class="crammer_singer", fit_intercept=False, tol=1e-10, max_iter=200_000
            )
            theirs.fit(X, y)
    assert ours.coef_.shape == (3, 4)
    assert ours.models_["class"].to_list() == ["all"]
    f_ours, f_theirs = _joint_objective(ours, X, y, loss), _joint_objective(theirs, X, y, loss)
    assert f_ours <= f_theirs * (1 + 1e-9), (f_ours, f_theirs)
    assert f_ours >= f_theirs * (1 - 1e-3), (f_ours, f_theirs)
    decision = ours.decision_function(X)
    np.testing.assert_allclose(decision, X @ ours.coef_.T, rtol=1e-9, atol=1e-12)
    assert np.array_equal(ours.predict(X), decision.argmax(axis=1))
    if loss == "multinomial":
        proba = ours.predict_proba(X)
        softmax = np.exp(decision - decision.max(axis=1, keepdims=True))
        np.testing.assert_allclose(proba, softmax / softmax.sum(axis=1, keepdims=True), rtol=1e-9)


@pytest.mark.parametrize("loss", ["multinomial", "multiclass_hinge", "multiclass_smooth_hinge"])
def test_joint_fit_is_the_plugin_fit(loss: str) -> None:
    X, codes = _iris()
    names = np.array(["setosa", "versicolor", "virginica"])
    clf = SDCAClassifier(loss=loss, l2=1e-2, max_epochs=5000).fit(X, names[codes])
    fitted = _plugin_fit(X, codes, loss=loss, l2=1e-2, max_epochs=5000)
    assert clf.coef_.tolist() == fitted[0]["coef"]
    assert clf.intercept_.tolist() == fitted[0]["intercept"]
    decision = _plugin_predict(fitted, X).list.to_array(3).to_numpy()
    assert np.array_equal(clf.decision_function(X), decision)
    assert np.array_equal(clf.predict(X), names[_plugin_predict(fitted, X, "class").to_numpy()])


def test_joint_loss_with_two_classes_gives_one_decision() -> None:
    X, y = R.breast_cancer_pm1()
    clf = SDCAClassifier(loss="multinomial", l2=1e-3).fit(X, y)
    assert clf.coef_.shape == (1, 30)
    decision = clf.decision_function(X)
    assert decision.shape == (569,)
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], 1.0 / (1.0 + np.exp(-decision)), rtol=1e-9)


# ------------------------------------------------------------------------------------------
# Hyperparameters and attributes
# ------------------------------------------------------------------------------------------


def test_warm_start_continues_from_the_previous_models() -> None:
    X, y = R.breast_cancer_pm1()
    cold = SDCAClassifier(l2=1e-4, tol=1e-8, max_epochs=5000).fit(X, y)
    warm = SDCAClassifier(l2=1e-3, tol=1e-8, max_epochs=5000, warm_start=True).fit(X, y)
    warm.set_params(l2=1e-4).fit(X, y)
    assert warm.n_iter_[0] < cold.n_iter_[0]
    _certified_distance(
        np.r_[cold.coef_[0], cold.intercept_],
        cold.duality_gap_[0],
        np.r_[warm.coef_[0], warm.intercept_],
        warm.duality_gap_[0],
        1e-4,
    )
    # new classes: the previous models do not fit them, so the fit starts cold
    X3, y3 = _iris()
    again = SDCAClassifier(warm_start=True).fit(X3[y3 < 2], y3[y3 < 2]).fit(X3, y3)
    assert np.array_equal(again.coef_, SDCAClassifier().fit(X3, y3).coef_)


def test_random_state_is_the_seed() -> None:
    X, y = R.breast_cancer_pm1()
    a = SDCAClassifier(sampling="uniform", random_state=3).fit(X, y)
    b = SDCAClassifier(sampling="uniform", random_state=3).fit(X, y)
    assert np.array_equal(a.coef_, b.coef_)
    assert a.coef_[0].tolist() == _plugin_model(X, y, sampling="uniform", seed=3)["coef"]
    assert np.array_equal(SDCAClassifier().fit(X, y).coef_, SDCAClassifier(random_state=0).fit(X, y).coef_)
    SDCAClassifier(random_state=np.random.RandomState(0)).fit(X, y)  # draws a seed


def test_class_weight_balanced_is_sample_weight() -> None:
    X, y = _iris()
    keep = y < 2
    X, y = np.vstack([X[keep], X[y == 2][:10]]), np.r_[y[keep], y[y == 2][:10]]
    counts = np.bincount(y)
    balanced = SDCAClassifier(class_weight="balanced").fit(X, y)
    explicit = SDCAClassifier().fit(X, y, sample_weight=(y.size / (3 * counts))[y])
    assert np.array_equal(balanced.coef_, explicit.coef_)


def test_unconverged_fit_warns() -> None:
    X, y = R.breast_cancer_pm1()
    with pytest.warns(ConvergenceWarning, match=r"1 of 1 fit\(s\).*max_epochs reached"):
        clf = SDCAClassifier(max_epochs=2, tol=1e-12).fit(X, y)
    assert clf.n_iter_.tolist() == [2]


# ------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------


def test_bad_inputs_raise_clear_errors() -> None:
    frame = pl.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "name": ["w", "x", "y", "z"]})
    y = [0, 0, 1, 1]
    with pytest.raises(TypeError, match=r"\['name'\] of X are not numeric"):
        SDCAClassifier().fit(frame, y)
    clf = SDCAClassifier(l2=0.1).fit(frame.select("a"), y)
    with pytest.raises(ValueError, match=r"missing the feature column\(s\) \['a'\]"):
        clf.predict(pl.DataFrame({"b": [1.0]}))
    with pytest.raises(ComputeError, match='column "a": row 1: feature value NaN'):
        SDCAClassifier().fit(pl.DataFrame({"a": [0.0, float("nan"), 2.0, 3.0]}), y)
    with pytest.raises(ValueError, match="classification loss; use SDCAClassifier"):
        SDCARegressor(loss="hinge").fit(np.eye(4), [0.0, 1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match='unknown loss "nope"'):
        SDCAClassifier(loss="nope").fit(np.eye(4), y)
    with pytest.raises(ValueError, match="C must be a positive number"):
        SDCAClassifier(C=0.0).fit(np.eye(4), y)
    with pytest.raises(ValueError, match="one class"):
        SDCAClassifier().fit(np.eye(4), y, sample_weight=[0, 0, 1, 1])


def test_csr_matrix_becomes_the_sparse_column_row_by_row() -> None:
    """indptr is the list offsets: empty rows stay empty lists, duplicates are summed."""
    import scipy.sparse as sp

    from polars_sdca.sklearn import _sparse_column

    rng = np.random.default_rng(3)
    dense = rng.normal(size=(7, 5)) * (rng.uniform(size=(7, 5)) < 0.4)
    dense[2] = 0.0
    rows, cols = np.nonzero(dense)
    # Unsorted entries with a duplicate: (r, c) split into two halves.
    X = sp.coo_array(
        (np.r_[dense[rows, cols] / 2, dense[rows, cols] / 2], (np.r_[rows, rows], np.r_[cols, cols])),
        shape=dense.shape,
    ).tocsr()
    column = _sparse_column(X)
    assert column.dtype == pl.List(pl.Struct({"index": pl.UInt32, "value": pl.Float64}))
    got = [{e["index"]: e["value"] for e in row} for row in column.to_list()]
    want = [{j: dense[i, j] for j in np.nonzero(dense[i])[0]} for i in range(7)]
    assert len(got) == 7
    for g, w in zip(got, want, strict=True):
        assert g.keys() == w.keys()
        assert all(abs(g[j] - w[j]) <= 1e-15 for j in g)
