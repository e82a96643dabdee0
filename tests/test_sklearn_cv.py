"""Cross-validated scikit-learn estimators (`SDCAClassifierCV`, `SDCARegressorCV`): the API
checks, and their held-out scores and choices against hand-written fold loops and against
scikit-learn's `LogisticRegressionCV` / `LassoCV` on the same folds.

References are recomputed, never read from our models: the fold loops fit `SDCAClassifier` /
`SDCARegressor` per fold and score with `sklearn.metrics`; scikit-learn's CV estimators run on
the same splits and grid.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.linear_model import ElasticNetCV, LassoCV, LogisticRegression, LogisticRegressionCV
from sklearn.metrics import accuracy_score, log_loss, mean_squared_error
from sklearn.model_selection import KFold, PredefinedSplit, StratifiedKFold
from sklearn.utils.estimator_checks import parametrize_with_checks

from polars_sdca.sklearn import SDCAClassifier, SDCAClassifierCV, SDCARegressor, SDCARegressorCV


# Repeating a row moves it between folds differently from weighting it, so the held-out curve
# (and the chosen value) need not be the same (scikit-learn marks its *CV estimators so). Both
# estimators pass the sample-weight checks on their data all the same: `auto` runs Newton (the
# classifier's ridge) or coordinate descent (the regressor's L1 path) far past tol, and these
# folds choose the same value.
#
# With several l1_ratio values the choice runs over more (ratio, l1) pairs, and on the checks'
# data the repeated and the weighted rows pick different pairs (one ratio does too on random
# data like the check's: l1_ratio=0.5 alone picked alpha 0.041 weighted, 0.0088 repeated): they are
# expected failures there (strict: they must fail), as scikit-learn marks them for its CV
# estimators. The classifier's L1 grid (``Cs=None``) with ratios [0.5, 1.0] is the exception
# since its ``l2 = 0`` fits run proximal Newton (4e12639): repeated and weighted rows pick the
# same pair there, dense and sparse.
def _expected_failures(estimator: Any) -> dict[str, str]:
    ratios = getattr(estimator, "l1_ratios", None) or estimator.l1_ratio
    l1_grid_classifier = isinstance(estimator, SDCAClassifierCV) and estimator.Cs is None
    if isinstance(ratios, list) and len(ratios) > 1 and not l1_grid_classifier:
        why = "repeated rows move between folds unlike weighted ones: another (l1_ratio, l1) pair"
        return {f"check_sample_weight_equivalence_on_{kind}_data": why for kind in ("dense", "sparse")}
    return {}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks(
    [
        SDCAClassifierCV(),
        SDCARegressorCV(l1s=20),
        SDCAClassifierCV(Cs=None, l1s=5, l1_ratios=[0.5, 1.0]),
        SDCAClassifierCV(Cs=4, l1_ratios=[0.0, 0.5]),
        SDCARegressorCV(l1s=10, l1_ratio=[0.5, 1.0]),
    ],
    expected_failed_checks=_expected_failures,
    xfail_strict=True,
)
def test_sklearn_api_checks(estimator: Any, check: Any) -> None:
    check(estimator)


# ------------------------------------------------------------------------------------------
# Scores and choices against hand-written fold loops
# ------------------------------------------------------------------------------------------

TIGHT = {"tol": 1e-12, "max_epochs": 20_000}


def _binary_iris() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_iris(return_X_y=True)
    keep = y > 0  # versicolor vs virginica: not separable, a finite optimum at every C
    return X[keep], y[keep]


def test_classifier_scores_equal_a_fold_loop() -> None:
    X, y = _binary_iris()
    Cs = [0.01, 0.1, 1.0, 10.0]
    folds = StratifiedKFold(4, shuffle=True, random_state=0)
    clf = SDCAClassifierCV(Cs=Cs, cv=folds, **TIGHT).fit(X, y)
    assert clf.penalty_ == "l2"
    assert clf.scoring_ == "log_loss"
    np.testing.assert_allclose(clf.Cs_, Cs, rtol=1e-12)
    want = np.empty((4, len(Cs)))
    for k, (train, test) in enumerate(folds.split(X, y)):
        for j, C in enumerate(Cs):
            # Every fold fits the refit's l2 = 1 / (C n) of the mean-loss objective (as LassoCV
            # keeps alpha): scikit-learn's C on the fold's rows would be C * n / n_train.
            m = SDCAClassifier(l2=1.0 / (C * len(y)), **TIGHT).fit(X[train], y[train])
            want[k, j] = log_loss(y[test], m.predict_proba(X[test]), labels=m.classes_)
    # Both sides are certified to a relative gap of 1e-12, a parameter error of at most
    # sqrt(2 gap / l2) ~ 1e-5 at the smallest l2: the log-losses agree far closer.
    got = clf.scores_[clf.classes_[1]]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    best = Cs[int(np.argmin(want.mean(axis=0)))]
    assert clf.C_[0] == pytest.approx(best, rel=1e-12)
    refit = SDCAClassifier(C=best, **TIGHT).fit(X, y)
    np.testing.assert_allclose(clf.coef_, refit.coef_, rtol=1e-6, atol=1e-8)


def test_one_vs_rest_chooses_per_class() -> None:
    X, y = load_iris(return_X_y=True)
    clf = SDCAClassifierCV(Cs=[0.1, 1.0, 10.0], scoring="accuracy", cv=3, random_state=2).fit(X, y)
    assert clf.C_.shape == (3,)
    assert set(clf.scores_) == {0, 1, 2}
    for c, fit_scores in enumerate(clf.cv_results_.struct.field("mean").to_list()):
        # Accuracy: larger is better; ties go to the larger penalty (smaller C), first in order.
        assert clf.C_[c] == pytest.approx(clf.Cs_[int(np.argmax(fit_scores))], rel=1e-12)
        np.testing.assert_allclose(clf.scores_[c].mean(axis=0), fit_scores, rtol=1e-12)
    assert accuracy_score(y, clf.predict(X)) > 0.9


def test_l1_path_classifier_is_sparse_at_large_l1() -> None:
    X, y = _binary_iris()
    clf = SDCAClassifierCV(Cs=None, l1s=8, l2=1e-3, cv=3, **TIGHT).fit(X, y)
    assert clf.penalty_ == "l1"
    assert clf.Cs_ is None
    assert clf.scores_[clf.classes_[1]].shape == (3, 8)
    assert clf.l1_[0] in clf.values_
    assert clf.l2_[0] == 1e-3
    assert clf.C_[0] == pytest.approx(1.0 / (1e-3 * len(y)))


def test_regressor_matches_lasso_cv() -> None:
    # The Lasso (l2 = 0) with the intercept unpenalised: LassoCV's problem at alpha = l1.
    X, y = load_diabetes(return_X_y=True)
    X = X[:200]
    y = y[:200] / 100.0
    folds = KFold(4, shuffle=True, random_state=3)
    l1s = np.geomspace(0.5, 1e-3, 12).tolist()
    ours = SDCARegressorCV(l1s=l1s, l2=0.0, cv=folds, **TIGHT).fit(X, y)
    ref = LassoCV(alphas=l1s, cv=folds, tol=1e-14, max_iter=1_000_000).fit(X, y)
    # LassoCV's mse_path_ is (n_alphas, n_folds), alphas decreasing like ours.
    # The Lasso is not strongly convex: a relative gap of 1e-12 bounds the objective, not w,
    # so the held-out errors agree to a few 1e-6 at the smallest l1 (the least regularized).
    np.testing.assert_allclose(ours.scores_, ref.mse_path_.T, rtol=1e-5)
    assert ours.alpha_ == pytest.approx(ref.alpha_, rel=1e-12)
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=1e-5, atol=1e-7)


def test_regressor_fold_loop_and_one_standard_error() -> None:
    X, y = load_diabetes(return_X_y=True)
    X, y = X[:150], y[:150] / 100.0
    folds = list(KFold(5, shuffle=True, random_state=4).split(X))
    reg = SDCARegressorCV(l1s=10, l2=1e-3, cv=folds, select="one_standard_error", **TIGHT).fit(X, y)
    want = np.empty((5, 10))
    for k, (train, test) in enumerate(folds):
        for j, l1 in enumerate(reg.alphas_):
            m = SDCARegressor(l1=l1, l2=1e-3, **TIGHT).fit(X[train], y[train])
            want[k, j] = mean_squared_error(y[test], m.predict(X[test]))
    # Certified to a relative gap of 1e-12 at l2 = 1e-3: ||w - w*|| <= sqrt(2 gap / l2) ~ 1e-5.
    np.testing.assert_allclose(reg.scores_, want, rtol=1e-5)
    mean, se = want.mean(axis=0), want.std(axis=0, ddof=1) / np.sqrt(5)
    best = int(np.argmin(mean))
    chosen = next(j for j in range(10) if mean[j] <= mean[best] + se[best])
    assert reg.alpha_ == reg.alphas_[chosen]


def test_bad_grids_and_folds_are_refused() -> None:
    X, y = _binary_iris()
    with pytest.raises(ValueError, match="exactly one of them"):
        SDCAClassifierCV(Cs=3, l1s=3).fit(X, y)
    with pytest.raises(ValueError, match="Cs must hold positive"):
        SDCAClassifierCV(Cs=[1.0, -1.0]).fit(X, y)
    with pytest.raises(ValueError, match="at least 2 folds"):
        SDCAClassifierCV(cv=1).fit(X, y)
    with pytest.raises(ValueError, match="overlap"):
        SDCAClassifierCV(cv=[(np.arange(50), np.arange(50)), (np.arange(50), np.arange(40, 100))]).fit(X, y)
    with pytest.raises(ValueError, match="in no test set"):
        SDCAClassifierCV(cv=[(np.arange(50, 100), np.arange(50))]).fit(X, y)
    with pytest.raises(ValueError, match="1 sample"):
        SDCARegressorCV().fit(X[:1], [1.0])


def test_l1_ratio_ties_l2_to_l1_like_elastic_net_cv() -> None:
    from sklearn.linear_model import ElasticNet

    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 6))
    y = X @ np.array([1.5, 0.0, -2.0, 0.0, 0.0, 0.5]) + 0.2 * rng.normal(size=120)
    rho = 0.5
    reg = SDCARegressorCV(l1s=12, l1_ratio=rho, cv=3, tol=1e-10, fit_intercept=False).fit(X, y)
    assert reg.l2_ == pytest.approx(reg.l1_ * (1 - rho) / rho, rel=1e-15)
    # The refit model is scikit-learn's ElasticNet at alpha = l1 / rho.
    ref = ElasticNet(alpha=reg.l1_ / rho, l1_ratio=rho, fit_intercept=False, tol=1e-12, max_iter=100_000)
    ref.fit(X, y)
    assert np.allclose(reg.coef_, ref.coef_, atol=1e-6)
    with pytest.raises(ValueError, match="l1_ratio"):
        SDCARegressorCV(l1s=None, Cs=3, l1_ratio=rho).fit(X, y)


# ------------------------------------------------------------------------------------------
# Several elastic-net mixings
# ------------------------------------------------------------------------------------------


def test_regressor_l1_ratios_match_elastic_net_cv_on_diabetes() -> None:
    """ElasticNetCV(l1_ratio=[...]) on scikit-learn's bundled diabetes data, the same folds
    given to both. Without an intercept both solve the same problem per fold, ElasticNet's
    ``||y - Xw||^2 / (2n) + alpha rho ||w||_1 + alpha (1 - rho) ||w||^2 / 2`` being ours at
    ``l1 = alpha rho``, ``l2 = alpha (1 - rho)``; both grids are 100 values from each ratio's
    exact top (``max |X^T y| / n``, ours as ``l1``, theirs as ``alpha = l1 / rho``) down by 1e-3."""
    X, y = load_diabetes(return_X_y=True)
    y = (y - y.mean()) / 100.0
    ratios = [0.1, 0.5, 0.9, 1.0]
    folds = list(KFold(5, shuffle=True, random_state=0).split(X))
    ours = SDCARegressorCV(l1s=100, l1_ratio=ratios, cv=folds, fit_intercept=False, **TIGHT).fit(X, y)
    ref = ElasticNetCV(l1_ratio=ratios, cv=folds, fit_intercept=False, tol=1e-14, max_iter=1_000_000).fit(
        X, y
    )
    assert ours.scores_.shape == (4, 5, 100)
    np.testing.assert_allclose(ours.alphas_, ref.alphas_ * np.array(ratios)[:, None], rtol=1e-12)
    # mse_path_ is (n_l1_ratios, n_alphas, n_folds). Our fits are certified to a relative gap of
    # 1e-12 (theirs run to tol 1e-14): the held-out errors agree to a few 1e-7.
    np.testing.assert_allclose(ours.scores_, ref.mse_path_.transpose(0, 2, 1), rtol=1e-5)
    assert ours.l1_ratio_ == ref.l1_ratio_
    assert ours.l1_ / ours.l1_ratio_ == pytest.approx(ref.alpha_, rel=1e-12)
    assert ours.l1_ + ours.l2_ == pytest.approx(ref.alpha_, rel=1e-12)
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=1e-5, atol=1e-7)


def test_classifier_l1_ratios_choose_the_argmin_over_single_ratio_fits() -> None:
    X, y = _binary_iris()
    ratios = [0.2, 0.5, 0.8]
    # Down to l1_max / 100: below, the tied l2 is small and the logistic fits slow to a gap of
    # 1e-12 (1.0, the Lasso, is exercised by the regressor against ElasticNetCV).
    opts: dict[str, Any] = {"Cs": None, "l1s": 6, "l1_min_ratio": 1e-2, "cv": 4, "random_state": 1, **TIGHT}
    clf = SDCAClassifierCV(l1_ratios=ratios, **opts).fit(X, y)
    assert clf.scores_[clf.classes_[1]].shape == (3, 4, 6)
    assert clf.values_.shape == (3, 6)
    singles = [SDCAClassifierCV(l1_ratio=rho, **opts).fit(X, y) for rho in ratios]
    for r, alone in enumerate(singles):
        # The same random_state draws the same folds for every ratio.
        np.testing.assert_array_equal(clf.scores_[clf.classes_[1]][r], alone.scores_[alone.classes_[1]])
        np.testing.assert_array_equal(clf.values_[r], alone.values_)
        assert alone.l1_ratio_ is not None
        assert alone.l1_ratio_.tolist() == [ratios[r]]
    means = [alone.scores_[alone.classes_[1]].mean(axis=0).min() for alone in singles]
    r = int(np.argmin(means))
    assert clf.l1_ratio_ is not None
    assert clf.l1_ratio_.tolist() == [ratios[r]]
    np.testing.assert_array_equal(clf.coef_, singles[r].coef_)
    assert clf.l1_[0] == singles[r].l1_[0]
    assert clf.l2_[0] == pytest.approx(clf.l1_[0] * (1 - ratios[r]) / ratios[r], rel=1e-15)
    # l1_ratio (ElasticNetCV's spelling) takes the same list.
    same = SDCAClassifierCV(l1_ratio=ratios, **opts).fit(X, y)
    np.testing.assert_array_equal(same.coef_, clf.coef_)


def test_bad_l1_ratios_are_refused_by_the_estimators() -> None:
    X, y = _binary_iris()
    with pytest.raises(ValueError, match="in l1_ratio or in l1_ratios, not both"):
        SDCAClassifierCV(Cs=None, l1s=3, l1_ratio=0.5, l1_ratios=[0.5]).fit(X, y)
    with pytest.raises(ValueError, match=r"l1_ratio ties l2 to l1 along an l1 path.*Cs=None"):
        SDCARegressorCV(l1s=None, Cs=3, l1_ratio=[0.5, 1.0]).fit(X, y)
    with pytest.raises(TypeError, match="l1_ratios must be a sequence"):
        SDCAClassifierCV(Cs=None, l1s=3, l1_ratios=0.5).fit(X, y)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"each value must be in \(0, 1\]"):
        SDCARegressorCV(l1s=3, l1_ratio=[0.5, 0.0]).fit(X, y)
    with pytest.raises(ValueError, match="l1_ratio is empty"):
        SDCARegressorCV(l1s=3, l1_ratio=[]).fit(X, y)
    with pytest.raises(ValueError, match="given twice"):
        SDCARegressorCV(l1s=3, l1_ratio=np.array([0.5, 0.5])).fit(X, y)


# ------------------------------------------------------------------------------------------
# Cs with l1_ratios: LogisticRegressionCV's grid of pairs (C, l1_ratio)
# ------------------------------------------------------------------------------------------


def _pair_penalties(C: float, rho: float, total: float) -> tuple[float, float]:
    """Our (l1, l2) of LogisticRegressionCV's pair (C, l1_ratio), as the estimator sets them:
    ratio 0 the l2 path's ``1 / (C sum_i s_i)``, else ``l1 = rho / (C sum_i s_i)`` with the
    path's tie ``l2 = l1 (1 - rho) / rho``."""
    if rho == 0.0:
        return 0.0, 1.0 / (C * total)
    l1 = rho / (C * total)
    return l1, (1.0 - rho) / rho * l1


def _argmin_pair(cv: dict[str, Any]) -> tuple[float, float]:
    """The (ratio, value) of the first smallest mean of a joined fit_cv struct (ratio-major)."""
    i = int(np.argmin(cv["mean"]))
    return cv["l1_ratio"][i], cv["values"][i]


def test_cs_with_l1_ratios_equal_single_ratio_calls() -> None:
    X, y = _binary_iris()
    Cs = [0.01, 0.1, 1.0, 10.0]
    ratios = [0.5, 0.0, 0.9]  # any order; 0 is the plain L2 path
    opts: dict[str, Any] = {"Cs": Cs, "cv": 4, "random_state": 1, **TIGHT}
    clf = SDCAClassifierCV(l1_ratios=ratios, **opts).fit(X, y)
    key = clf.classes_[1]
    assert clf.penalty_ == "elasticnet"
    assert clf.scores_[key].shape == (4, len(Cs), len(ratios))
    assert clf.values_.shape == (len(ratios), len(Cs))
    np.testing.assert_array_equal(clf.Cs_, Cs)
    np.testing.assert_array_equal(clf.l1_ratios_, ratios)
    cv = clf.cv_results_.to_list()[0]
    assert cv["l1_ratio"] == [rho for rho in ratios for _ in Cs]
    singles = [SDCAClassifierCV(l1_ratios=[rho], **opts).fit(X, y) for rho in ratios]
    for j, (rho, alone) in enumerate(zip(ratios, singles, strict=True)):
        # The same folds (one seed) and the same path: each curve is the single call's.
        assert alone.scores_[key].shape == (4, len(Cs), 1)
        np.testing.assert_array_equal(clf.scores_[key][..., j], alone.scores_[key][..., 0])
        np.testing.assert_array_equal(clf.values_[j], alone.values_[0])
        want = [_pair_penalties(C, rho, len(y))[0 if rho > 0 else 1] for C in Cs]
        np.testing.assert_array_equal(clf.values_[j], want)
    # Ratio 0 is the plain Cs path, bit for bit; a number is one ratio without the ratio axis.
    plain = SDCAClassifierCV(**opts).fit(X, y)
    np.testing.assert_array_equal(clf.scores_[key][..., 1], plain.scores_[key])
    number = SDCAClassifierCV(l1_ratio=0.9, **opts).fit(X, y)
    np.testing.assert_array_equal(number.scores_[key], clf.scores_[key][..., 2])
    # The pair of the smallest mean log-loss, its refit the chosen ratio's single call's.
    rho, value = _argmin_pair(cv)
    j = ratios.index(rho)
    assert clf.l1_ratio_ is not None
    assert clf.l1_ratio_.tolist() == [rho]
    assert clf.C_[0] == Cs[list(clf.values_[j]).index(value)]
    assert singles[j].C_[0] == clf.C_[0]
    np.testing.assert_array_equal(clf.coef_, singles[j].coef_)
    assert (clf.l1_[0], clf.l2_[0]) == _pair_penalties(clf.C_[0], rho, len(y))


def test_cs_with_l1_ratios_choose_per_one_vs_rest_class() -> None:
    X, y = load_iris(return_X_y=True)
    ratios = [0.0, 0.5]
    clf = SDCAClassifierCV(Cs=[0.1, 1.0, 10.0], l1_ratios=ratios, cv=3, scoring="accuracy").fit(X, y)
    assert clf.C_.shape == (3,)
    assert clf.l1_ratio_ is not None
    assert clf.l1_ratio_.shape == (3,)
    assert set(clf.scores_) == {0, 1, 2}
    for c, cv in enumerate(clf.cv_results_.to_list()):
        assert clf.scores_[c].shape == (3, 3, 2)
        # Accuracy: the first largest mean, ratio-major.
        i = int(np.argmax(cv["mean"]))
        assert clf.l1_ratio_[c] == cv["l1_ratio"][i] == cv["chosen_l1_ratio"]
        assert clf.C_[c] == clf.Cs_[i % 3]
    assert accuracy_score(y, clf.predict(X)) > 0.9


def test_cs_with_l1_ratios_one_standard_error_rule_over_every_pair() -> None:
    X, y = _binary_iris()
    Cs = np.logspace(-2, 2, 9).tolist()
    ratios = [0.0, 0.5, 0.9]
    opts: dict[str, Any] = {"Cs": Cs, "cv": 5, "random_state": 0, "scoring": "accuracy", **TIGHT}
    clf = SDCAClassifierCV(l1_ratios=ratios, select="one_standard_error", **opts).fit(X, y)
    best = SDCAClassifierCV(l1_ratios=ratios, **opts).fit(X, y)
    cv = clf.cv_results_.to_list()[0]
    assert cv["mean"] == best.cv_results_.to_list()[0]["mean"]
    # By hand: the best mean (ratio-major, first on ties), then of the pairs within one
    # standard error of it the one of the smallest C (the path's top), the better mean first.
    mean = np.asarray(cv["mean"]).reshape(len(ratios), len(Cs))
    se = np.asarray(cv["se"]).reshape(len(ratios), len(Cs))
    r, v = np.unravel_index(int(np.argmax(mean)), mean.shape)
    within = [
        (c, -mean[q, c], q)
        for q in range(len(ratios))
        for c in range(len(Cs))
        if mean[q, c] >= mean[r, v] - se[r, v]
    ]
    c, _, q = min(within)
    assert clf.l1_ratio_ is not None
    assert (clf.l1_ratio_[0], clf.C_[0]) == (ratios[q], Cs[c])
    assert (cv["best_l1_ratio"], cv["chosen_l1_ratio"]) == (ratios[r], ratios[q])
    # The refit model is the plain fit at that pair (certified: the same objective value, up to
    # the gaps and the rounding of the objective's sum).
    l1, l2 = _pair_penalties(Cs[c], ratios[q], len(y))
    assert (clf.l1_[0], clf.l2_[0]) == (l1, l2)
    m = clf.models_["model"][0]
    plain = SDCAClassifier(l1=l1, l2=l2, **TIGHT).fit(X, y).models_["model"][0]
    assert abs(m["primal"] - plain["primal"]) <= m["gap"] + plain["gap"] + 1e-14 * plain["primal"]


def test_cs_with_l1_ratios_refit_a_pair_the_ratio_alone_would_not_choose() -> None:
    """The one-standard-error rule's bound comes from the best pair over every ratio, so the
    chosen ratio's own call may have chosen another value (on iris, one-vs-rest, these folds:
    one class): that class's model is then fitted at the chosen pair, the others come from
    their ratio's call."""
    X, y = load_iris(return_X_y=True)
    Cs = np.logspace(-2, 2, 15).tolist()
    ratios = [0.9, 0.0, 0.5]
    opts: dict[str, Any] = {
        "Cs": Cs, "cv": 3, "random_state": 1, "scoring": "accuracy", "select": "one_standard_error", **TIGHT
    }  # fmt: skip
    clf = SDCAClassifierCV(l1_ratios=ratios, **opts).fit(X, y)
    alone = {rho: SDCAClassifierCV(l1_ratios=[rho], **opts).fit(X, y) for rho in ratios}
    refit = 0
    for c, cv in enumerate(clf.cv_results_.to_list()):
        rho = clf.l1_ratio_[c] if clf.l1_ratio_ is not None else None
        assert rho == cv["chosen_l1_ratio"]
        m, own = clf.models_["model"][c], alone[rho].models_["model"][c]
        if alone[rho].C_[c] == clf.C_[c]:
            assert m == own, "the ratio's call chose the same pair: its refit model"
            continue
        refit += 1
        l1, l2 = _pair_penalties(clf.C_[c], rho, len(y))
        assert (m["l1"], m["l2"]) == (l1, l2)
        assert m["converged"]
        codes = np.where(y == c, 1, 0)
        plain = SDCAClassifier(l1=l1, l2=l2, **TIGHT).fit(X, codes).models_["model"][0]
        assert abs(m["primal"] - plain["primal"]) <= m["gap"] + plain["gap"] + 1e-14 * plain["primal"]
    assert refit == 1


def test_cs_with_bad_l1_ratios_are_refused() -> None:
    X, y = _binary_iris()
    for bad, error, match in [
        ([0.5, 1.5], ValueError, r"^l1_ratios got 1.5; with Cs each value must be in \[0, 1\] \(0: the L2"),
        ([-0.1], ValueError, r"got -0.1; with Cs each value must be in \[0, 1\]"),
        ([float("nan")], ValueError, r"got nan; with Cs each value must be in \[0, 1\]"),
        ([0.5, 0.0, 0.5], ValueError, r"l1_ratios: 0.5 is given twice; pass each value once"),
        ([], ValueError, r"l1_ratios is empty; pass at least one value in \[0, 1\]"),
        ([0.5, "a"], TypeError, r"each l1_ratios value must be a number in \[0, 1\], got 'a'"),
        ([True], TypeError, r"each l1_ratios value must be a number"),
    ]:
        with pytest.raises(error, match=match):
            SDCAClassifierCV(Cs=3, l1_ratios=bad).fit(X, y)
    with pytest.raises(ValueError, match=r"^l1_ratio got 2.0; with Cs"):
        SDCAClassifierCV(Cs=3, l1_ratio=2.0).fit(X, y)
    with pytest.raises(TypeError, match=r"l1_ratio must be a number in \[0, 1\] or a sequence"):
        SDCAClassifierCV(Cs=3, l1_ratio="0.5").fit(X, y)  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match=r"l1=0.1 is not used with Cs and l1_ratios.*leave l1=0, or pass Cs=None"
    ):
        SDCAClassifierCV(Cs=3, l1_ratios=[0.5], l1=0.1).fit(X, y)
    with pytest.raises(ValueError, match="exactly one of them"):
        SDCAClassifierCV(Cs=3, l1s=3, l1_ratios=[0.5]).fit(X, y)
    with pytest.raises(ValueError, match=r"l1_ratios holds 1.0, the L1 penalty alone.*'multinomial'"):
        SDCAClassifierCV(Cs=3, l1_ratios=[0.5, 1.0], loss="multinomial").fit(X, y)


def _breast_cancer_equal_folds() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's bundled breast cancer data, standardized, its 20 mean and standard-error
    features (with the 10 "worst" ones too the L2 penalty wins at every C; with these an
    elastic net does), without its first benign row: 212 malignant and 356 benign rows deal
    into 4 stratified folds of 142 rows, so that every fold trains on as many rows (and so at
    the same scikit-learn ``C``)."""
    X, y = load_breast_cancer(return_X_y=True)
    drop = int(np.flatnonzero(y == 1)[0])
    X, y = np.delete(X, drop, axis=0)[:, :20], np.delete(y, drop)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    fold = np.empty(len(y), dtype=np.int64)
    for k, (_, test) in enumerate(StratifiedKFold(4, shuffle=True, random_state=0).split(X, y)):
        fold[test] = k
    assert (np.bincount(fold) == 142).all()
    return X, y, fold


def _logistic_objective(X: np.ndarray, y: np.ndarray, w: np.ndarray, l1: float, l2: float) -> float:
    """Our primal objective without an intercept: the mean log-loss plus the penalties."""
    margins = np.where(y == 1, 1.0, -1.0) * (X @ w)
    return float(np.logaddexp(0.0, -margins).mean() + l2 / 2 * w @ w + l1 * np.abs(w).sum())


def _to_optimum(X: np.ndarray, y: np.ndarray, w: np.ndarray, l1: float, l2: float) -> tuple[float, float]:
    """A bound on ``||w - w*||`` (the optimum on ``(X, y)``) and one on ``P*``: by strong
    convexity ``||w - w*|| <= sqrt(2 (P(w) - P*) / l2)``, and ``P* >= D``, the dual value of
    our plain fit there (to a relative gap of 1e-12)."""
    m = SDCAClassifier(l1=l1, l2=l2, fit_intercept=False, tol=1e-12, max_epochs=100_000).fit(X, y)
    model = m.models_["model"][0]
    eps = max(_logistic_objective(X, y, w, l1, l2) - model["dual"], 0.0)
    return float(np.sqrt(2 * eps / l2)), float(model["primal"])


@pytest.mark.slow
def test_cs_with_l1_ratios_choose_as_logistic_regression_cv_on_breast_cancer() -> None:
    """``LogisticRegressionCV(Cs, l1_ratios)`` (SAGA, elastic net, no intercept: ours regularizes
    a constant feature, theirs does not) on the same folds. Every fold of ours keeps the refit's
    penalties, ``l1 = r / (C n)``, ``l2 = (1 - r) / (C n)``: on ``n_train`` rows that is
    scikit-learn's fold problem at ``C n / n_train``, so their grid is ours times ``n / n_train``
    (4/3 here) and each (fold, C, ratio) is the same optimization problem on both sides."""
    X, y, fold = _breast_cancer_equal_folds()
    n, n_train = len(y), len(y) - 142
    Cs = np.logspace(-2, 0, 5)
    ratios = [0.0, 0.5, 0.9]
    split = PredefinedSplit(fold)
    tol = 1e-12
    ours = SDCAClassifierCV(
        Cs=Cs.tolist(), l1_ratios=ratios, cv=split, fit_intercept=False, tol=tol, max_epochs=100_000
    ).fit(X, y)
    ref = LogisticRegressionCV(
        Cs=Cs * n / n_train,
        l1_ratios=ratios,
        cv=split,
        solver="saga",
        fit_intercept=False,
        tol=1e-8,
        max_iter=1_000_000,
        scoring="neg_log_loss",
        use_legacy_attributes=True,
    ).fit(X, y)
    got, want = ours.scores_[1], -ref.scores_[1]  # mean held-out log-loss, (n_folds, n_Cs, n_l1_ratios)
    assert got.shape == want.shape == (4, len(Cs), len(ratios))
    # The tolerance, from certificates: the held-out mean log-loss moves by at most
    # max_i ||x_i|| ||w - w'|| (the loss is 1-Lipschitz in the margin), and ||w - w'|| is at
    # most the two models' distances to the fold's optimum: SAGA's from _to_optimum, ours
    # sqrt(2 gap / l2) with its certified gap <= tol P <= 2 tol P*.
    for f, (train, test) in enumerate(split.split()):
        radius_x = np.linalg.norm(X[test], axis=1).max()
        for c, C in enumerate(Cs):
            for j, rho in enumerate(ratios):
                l1, l2 = _pair_penalties(C, rho, n)
                saga, top = _to_optimum(X[train], y[train], ref.coefs_paths_[1][f, c, j], l1, l2)
                bound = radius_x * (saga + np.sqrt(2 * 2 * tol * top / l2))
                assert abs(got[f, c, j] - want[f, c, j]) <= bound, (f, C, rho, bound)
    # The same pair (ours in our C, theirs in theirs), an elastic net inside both grids, and not
    # by chance: the runner-up's mean is behind by more than twice the largest score difference.
    assert ours.l1_ratio_ is not None
    assert ours.l1_ratio_.tolist() == ref.l1_ratio_.tolist() == [0.5]
    np.testing.assert_allclose(ours.Cs_ * n / n_train, ref.Cs_, rtol=1e-15)
    assert ours.C_[0] == Cs[3]
    assert ref.C_[0] == ref.Cs_[3]
    means = np.sort(got.mean(axis=0).ravel())
    assert means[1] - means[0] > 2 * np.abs(got - want).max()
    # The refit is ours at (C_, l1_ratio_) on all rows, scikit-learn's LogisticRegression there.
    C, rho = ours.C_[0], ours.l1_ratio_[0]
    full = LogisticRegression(
        C=C, l1_ratio=rho, solver="saga", fit_intercept=False, tol=1e-10, max_iter=1_000_000
    )
    w = full.fit(X, y).coef_[0]
    l1, l2 = _pair_penalties(C, rho, n)
    saga, _ = _to_optimum(X, y, w, l1, l2)
    assert np.linalg.norm(ours.coef_[0] - w) <= saga + np.sqrt(2 * ours.duality_gap_[0] / l2)
