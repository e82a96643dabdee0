"""scikit-learn estimators backed by the SDCA plugin: :class:`SDCAClassifier`, :class:`SDCARegressor`
and their cross-validated versions :class:`SDCAClassifierCV`, :class:`SDCARegressorCV`.

The estimators are thin adapters: ``X`` and ``y`` become a Polars frame, the fit is one
:func:`polars_sdca.fit` query and the predictions come from :func:`polars_sdca.predict`, so they
run on the same Rust core as the expression API and return the same models.

Inputs
    ``X`` as a numpy array (one ``Array(Float64, d)`` column, read without copying when
    C-contiguous float64), a ``scipy.sparse`` matrix (one sparse ``List(Struct{index, value})``
    column built from the CSR arrays) or a Polars DataFrame (its columns, which must all be
    numeric, passed to the plugin as they are).

Objective
    The plugin's (DESIGN.md section 3), with the data term a weighted *mean* of the loss::

        P(w, b) = sum_i s_i phi(x_i.w + b, y_i) / sum_i s_i + (l2/2)||(w, b')||^2 + l1 ||w||_1

    ``s_i`` is ``sample_weight`` times the ``class_weight`` of the row's class; the weights are
    rescaled to sum to the number of rows before they reach the plugin (as scikit-learn's
    ``ElasticNet`` does), so an integer weight is the same as repeating the row, and a zero
    weight the same as removing it. Without weights this is exactly ``polars_sdca.fit``.
    ``C`` (when set) replaces ``l2`` by ``1 / (C sum_i s_i)``: then the problem is
    scikit-learn's ``C sum_i s_i phi + ||w||^2 / 2`` (``LogisticRegression``, ``LinearSVC``;
    ``Ridge(alpha=1/C)`` with ``loss="squared"``). As in liblinear, the intercept is a constant
    feature ``intercept_scaling`` whose weight ``b'`` is regularized.

Cross-validation
    :class:`SDCAClassifierCV` and :class:`SDCARegressorCV` run :func:`polars_sdca.fit_cv`: the
    path over a grid of ``C`` (``l2 = 1 / (C sum_i s_i)``, ``l1`` fixed) or of ``l1`` (``l2``
    fixed), K-fold held-out scores per value, the choice and the refit, all in the plugin; one
    ``fit_cv`` per one-vs-rest class, in one query. A list of elastic-net mixings
    (``l1_ratio=[...]``, ``ElasticNetCV``'s spelling, or ``l1_ratios=[...]`` of
    ``LogisticRegressionCV`` in the classifier) runs one ``l1`` path per ratio on the same
    folds and picks the best ``(l1_ratio, l1)`` pair. In the classifier ``Cs`` with
    ``l1_ratios`` is ``LogisticRegressionCV``'s grid of pairs ``(C, l1_ratio)``: one
    ``fit_cv`` per ratio (``l1 = r / (C sum_i s_i)`` with ``l2`` tied to it; ``r = 0`` the
    ``l2`` path), in one query on the same folds, the pair chosen over all of them.

Classes
    Two classes: one binary fit with labels ``-1`` / ``+1`` (``classes_[1]`` is ``+1``). More
    than two: one-vs-rest (liblinear's default), the ``k`` binary fits as ``k`` expressions of
    one Polars query, except for the joint multiclass losses ``"multiclass_hinge"``
    (Crammer-Singer), ``"multiclass_smooth_hinge"`` and ``"multinomial"`` (softmax), which are
    one fit over all classes.
    Regression losses in the classifier fit ``-1`` / ``+1`` targets, like ``RidgeClassifier``.
"""

from __future__ import annotations

import numbers
import warnings
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
import polars as pl
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from polars_sdca import _internal
from polars_sdca.functions import fit, fit_cv, predict

if TYPE_CHECKING:
    from collections.abc import Sequence

    from polars_sdca._typing import CvSelect, Loss, PredictKind, Sampling, Scoring, Solver

__all__ = ["SDCAClassifier", "SDCAClassifierCV", "SDCARegressor", "SDCARegressorCV"]

_FloatArray = npt.NDArray[np.float64]

_REGRESSION_LOSSES = ("squared", "absolute", "epsilon_insensitive", "quantile")
"""Losses on a real-valued target; the classifier fits them to -1 / +1 targets."""
_JOINT_LOSSES = ("multiclass_hinge", "multiclass_smooth_hinge", "multinomial")
"""Multiclass losses fitted jointly over all classes (one model with ``k`` weight vectors)."""
_CLASSIFICATION_LOSSES = ("hinge", "smooth_hinge", "squared_hinge", "logistic", *_JOINT_LOSSES)
"""Losses on class labels, which the regressor refuses."""
_PROBA_LOSSES = ("logistic", "multinomial")
"""Losses that define class probabilities."""

# Internal column names; they cannot clash with a user's feature names, which are only read.
_X = "__sdca_X"
_Y = "__sdca_y"
_W = "__sdca_w"
_FOLD = "__sdca_fold"


def _vector_column(X: _FloatArray) -> pl.Series:
    """Dense rows as one ``Array(Float64, d)`` column (a view of ``X`` when C-contiguous)."""
    return pl.Series(_X, np.ascontiguousarray(X, dtype=np.float64))


def _sparse_column(X: Any) -> pl.Series:
    """CSR rows as one ``List(Struct{index: UInt32, value: Float64})`` column: ``indptr`` is
    the list offsets (built in Rust, no regrouping)."""
    X = sp.csr_array(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return _internal.csr_column(
        _X, pl.Series(X.indptr.astype(np.int64)), pl.Series(X.indices), pl.Series(X.data, dtype=pl.Float64)
    )


def _seed(random_state: Any) -> int:
    """The plugin's ``seed``: the integer itself, 0 for None, or a draw from a RandomState."""
    if random_state is None:
        return 0
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return int(random_state)
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


class _SDCAModel(BaseEstimator):  # type: ignore[misc]
    """Shared fit and predict plumbing; subclasses set the label encoding."""

    loss: Loss
    l2: float
    C: float | None
    l1: float
    smoothing: float
    epsilon: float
    quantile: float
    solver: Solver
    sampling: Sampling
    tol: float
    max_epochs: int
    check_every: int
    fit_intercept: bool
    intercept_scaling: float
    max_seconds: float | None
    warm_start: bool
    random_state: Any
    models_: pl.DataFrame
    n_features_in_: int
    feature_names_in_: npt.NDArray[np.object_]

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # -- inputs --------------------------------------------------------------------------

    def _features(self, X: Any, y: Any = None, *, reset: bool) -> tuple[pl.DataFrame, str | list[str], Any]:
        """The feature frame, the ``features`` argument for the plugin, and the checked ``y``.

        ``reset`` (fit): check ``X`` and ``y`` and record the width; else check ``X`` against it.
        """
        if isinstance(X, pl.DataFrame):
            return self._frame_features(X, y, reset=reset)
        if reset:
            X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, **self._y_checks())
        else:
            X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        column = _sparse_column(X) if sp.issparse(X) else _vector_column(X)
        return column.to_frame(), _X, y

    def _frame_features(
        self, X: pl.DataFrame, y: Any, *, reset: bool
    ) -> tuple[pl.DataFrame, str | list[str], Any]:
        if not reset and hasattr(self, "feature_names_in_"):
            names = [str(c) for c in self.feature_names_in_]
            missing = [c for c in names if c not in X.columns]
            if missing:
                msg = f"X is missing the feature column(s) {missing} the model was fitted with"
                raise ValueError(msg)
            X = X.select(names)
        other = [c for c, t in X.schema.items() if not t.is_numeric()]
        if other:
            msg = (
                f"column(s) {other} of X are not numeric; select the feature columns, "
                "for example X.select(polars.selectors.numeric())"
            )
            raise TypeError(msg)
        if X.width == 0 or X.height == 0:
            msg = f"X has shape {X.shape}; at least one row and one feature column are needed"
            raise ValueError(msg)
        if reset:  # y first: validating y alone resets the feature names
            y = validate_data(self, y=y.to_numpy() if isinstance(y, pl.Series) else y, **self._y_checks())
            if len(y) != X.height:
                msg = f"X has {X.height} rows but y has {len(y)} values"
                raise ValueError(msg)
            self.n_features_in_ = X.width
            self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        elif X.width != self.n_features_in_:
            msg = f"X has {X.width} features, but {type(self).__name__} is expecting {self.n_features_in_}"
            raise ValueError(msg)
        return X, X.columns, y

    def _y_checks(self) -> dict[str, Any]:
        return {}

    def _weights(
        self, sample_weight: Any, row_class_weight: _FloatArray | None, n: int
    ) -> tuple[_FloatArray | None, float]:
        """Row weights rescaled to sum to ``n`` (None when all are 1) and their original sum.

        The sum sets ``l2`` from ``C``; see the module docs.
        """
        s = (
            None
            if sample_weight is None
            else _check_sample_weight(sample_weight, np.empty((n, 0)), ensure_non_negative=True)
        )
        if row_class_weight is not None:
            s = row_class_weight if s is None else s * row_class_weight
        if s is None:
            return None, float(n)
        total = float(s.sum())
        if not total > 0.0:
            msg = "the sample weights (times class_weight) sum to zero; give some row a positive weight"
            raise ValueError(msg)
        return np.asarray(s * (n / total), dtype=np.float64), total

    # -- fit -----------------------------------------------------------------------------

    def _options(self, total_weight: float) -> dict[str, Any]:
        """The plugin's fit options from the hyperparameters (values are checked in Rust)."""
        if self.C is None:
            l2 = self.l2
        elif isinstance(self.C, numbers.Real) and self.C > 0:
            l2 = 1.0 / (float(self.C) * total_weight)
        else:
            msg = f"C must be a positive number or None, got {self.C!r}"
            raise ValueError(msg)
        return {
            "loss": self.loss,
            "l2": l2,
            "l1": self.l1,
            "smoothing": self.smoothing,
            "epsilon": self.epsilon,
            "quantile": self.quantile,
            "solver": self.solver,
            "sampling": self.sampling,
            "tol": self.tol,
            "max_epochs": self.max_epochs,
            "check_every": self.check_every,
            "seed": _seed(self.random_state),
            "fit_intercept": self.fit_intercept,
            "intercept_scaling": self.intercept_scaling,
            "max_seconds": self.max_seconds,
        }

    def _fit_models(
        self,
        frame: pl.DataFrame,
        features: str | list[str],
        labels: dict[str, pl.Series],
        weights: tuple[_FloatArray | None, float],
        warm: pl.Series | None,
    ) -> pl.Series:
        """One fit per label column, all in one query; returns their models, in order."""
        options = self._options(weights[1])
        if isinstance(features, str) and frame[features].dtype == pl.List:
            options["n_features"] = self.n_features_in_
        columns = [s.alias(name) for name, s in labels.items()]
        if weights[0] is not None:
            columns.append(pl.Series(_W, weights[0]))
        data = frame.with_columns(columns)
        exprs = [
            fit(
                name,
                features,
                weights=None if weights[0] is None else _W,
                warm_start=None if warm is None else warm.slice(i, 1),
                **options,
            ).alias(name)
            for i, name in enumerate(labels)
        ]
        row = data.select(exprs)
        return pl.concat([row[name] for name in labels]).alias("model")

    def _warn_unconverged(self, models: pl.DataFrame, what: str | None) -> None:
        """A ConvergenceWarning naming the first fit (by its ``what`` column) that stopped early."""
        late = models.filter(~pl.col("model").struct.field("converged"))
        if late.height:
            first = late.row(0, named=True)
            m = first["model"]
            where = "" if what is None else f" ({what} {first[what]!r})"
            msg = (
                f"{type(self).__name__}: {late.height} of {models.height} fit(s) stopped before the "
                f"duality gap reached tol={self.tol}; first{where}: gap {m['gap']:.3g} after "
                f"{m['epochs']} epochs ({m['status']}). Increase max_epochs (or max_seconds), "
                "or loosen tol"
            )
            warnings.warn(msg, ConvergenceWarning, stacklevel=3)

    def _usable_warm_start(self, n_models: int, same_classes: bool = True) -> pl.Series | None:
        """The previous models when ``warm_start`` is on and they have this problem's shape:
        as many models, of the new width, joint or not alike, for the same classes."""
        if not self.warm_start or not hasattr(self, "models_"):
            return None
        models = self.models_["model"]
        joint = models.struct.field("loss")[0] in _JOINT_LOSSES
        if (
            models.len() != n_models
            or not (models.struct.field("n_features") == self.n_features_in_).all()
            or joint != (self.loss in _JOINT_LOSSES)
            or not same_classes
        ):
            return None
        return models

    # -- predict -------------------------------------------------------------------------

    def _predict_frame(self, X: Any, kind: PredictKind) -> pl.DataFrame:
        """``kind`` outputs of every fitted model for ``X``: one column per model."""
        check_is_fitted(self, "models_")
        frame, features, _ = self._features(X, reset=False)
        models = self.models_["model"]
        return frame.select(
            predict(models.slice(i, 1), features, kind=kind).alias(str(i)) for i in range(models.len())
        )


class SDCAClassifier(ClassifierMixin, _SDCAModel):  # type: ignore[misc]
    """Linear classifier trained by stochastic dual coordinate ascent in the Rust plugin.

    Parameters
    ----------
    loss : str, default="logistic"
        "logistic", "hinge", "smooth_hinge", "squared_hinge"; "multinomial",
        "multiclass_hinge" or "multiclass_smooth_hinge" (one joint fit over all classes);
        or a regression loss
        ("squared", "absolute", "epsilon_insensitive", "quantile") fitted to -1 / +1 targets.
    l2 : float, default=1e-4
        L2 strength lambda of the mean-loss objective (ignored when ``C`` is set).
    C : float, optional
        scikit-learn's inverse regularization: ``l2 = 1 / (C sum_i s_i)``.
    l1 : float, default=0.0
        L1 strength (elastic net by Prox-SDCA).
    smoothing, epsilon, quantile : float, default=1.0, 0.1, 0.5
        Parameters of "smooth_hinge", "epsilon_insensitive" and "quantile".
    solver : {"auto", "sdca", "accelerated", "pdprox", "newton", "cd"}, default="auto"
        Plugin solver (see :func:`polars_sdca.fit`; the pdprox-only options ``groups``,
        ``group_norm``, ``output`` and ``pdprox_variant`` are in the expression API).
    sampling : {"permutation", "uniform", "gap"}, default="permutation"
        Coordinate order (see :func:`polars_sdca.fit`).
    tol : float, default=1e-6
        Stop when the duality gap ``<= tol * primal``.
    max_epochs, check_every : int, default=500, 1
        Epoch cap and gap-check period.
    fit_intercept : bool, default=True
        Fit an intercept (a regularized constant feature, liblinear's treatment).
    intercept_scaling : float, default=1.0
        Value of the constant feature.
    max_seconds : float, optional
        Time budget per fit.
    class_weight : dict, "balanced" or None, default=None
        Weight of each class, multiplied into the sample weights (all one-vs-rest fits use
        the same row weights). "balanced" gives class ``c`` the weight
        ``n / (k * n_c)`` (with ``n_c`` the weighted count).
    warm_start : bool, default=False
        Start from the previous fit's models when the classes and width are unchanged.
    random_state : int, RandomState or None, default=None
        The plugin's ``seed``; None uses seed 0, so fits are reproducible (the optimum does
        not depend on the seed, only the path to it).

    Attributes
    ----------
    classes_ : ndarray of shape (k,)
        Sorted class labels.
    coef_ : ndarray of shape (1, d) for two classes, else (k, d)
        Weights (two classes: of ``classes_[1]``; joint losses with two classes: the
        difference of the two class vectors).
    intercept_ : ndarray of shape (1,) or (k,)
        Intercepts ``b = intercept_scaling * b'`` (zeros without ``fit_intercept``).
    n_iter_ : ndarray of shape (n_fits,)
        Epochs of each fit (one fit, or ``k`` for one-vs-rest).
    duality_gap_ : ndarray of shape (n_fits,)
        Certified duality gap ``P - D`` of each fit.
    models_ : polars.DataFrame
        One row per fit: ``class`` (the positive class of a binary or one-vs-rest fit as a
        string, or ``"all"`` for a joint fit) and ``model`` (the plugin's model struct, with
        ``gap_trace`` for :func:`polars_sdca.plot.convergence`).
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of shape (d,)
        Feature column names, when fitted on a Polars DataFrame.

    Examples
    --------
    >>> import numpy as np
    >>> from polars_sdca.sklearn import SDCAClassifier
    >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    >>> clf = SDCAClassifier(loss="logistic", l2=0.1).fit(X, ["no", "no", "yes", "yes"])
    >>> clf.predict([[-3.0], [3.0]]).tolist()
    ['no', 'yes']
    >>> clf.predict_proba([[0.0]]).round(3).tolist()
    [[0.5, 0.5]]
    >>> bool(clf.duality_gap_[0] <= 1e-6 * clf.models_["model"].struct.field("primal")[0])
    True
    """

    classes_: npt.NDArray[Any]
    coef_: _FloatArray
    intercept_: _FloatArray
    n_iter_: npt.NDArray[np.int64]
    duality_gap_: _FloatArray

    def __init__(
        self,
        *,
        loss: Loss = "logistic",
        l2: float = 1e-4,
        C: float | None = None,
        l1: float = 0.0,
        smoothing: float = 1.0,
        epsilon: float = 0.1,
        quantile: float = 0.5,
        solver: Solver = "auto",
        sampling: Sampling = "permutation",
        tol: float = 1e-6,
        max_epochs: int = 500,
        check_every: int = 1,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        max_seconds: float | None = None,
        class_weight: dict[Any, float] | Literal["balanced"] | None = None,
        warm_start: bool = False,
        random_state: Any = None,
    ) -> None:
        self.loss = loss
        self.l2 = l2
        self.C = C
        self.l1 = l1
        self.smoothing = smoothing
        self.epsilon = epsilon
        self.quantile = quantile
        self.solver = solver
        self.sampling = sampling
        self.tol = tol
        self.max_epochs = max_epochs
        self.check_every = check_every
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_seconds = max_seconds
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.random_state = random_state

    def _joint(self) -> bool:
        """Whether the fitted model is one joint multiclass fit (read from the model, so that a
        later ``set_params(loss=...)`` does not change how it predicts)."""
        return bool(self.models_["model"].struct.field("loss")[0] in _JOINT_LOSSES)

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> SDCAClassifier:
        """Fit the model(s) in one Polars query.

        Parameters
        ----------
        X : array-like, sparse matrix or polars.DataFrame of shape (n, d)
            Features.
        y : array-like of shape (n,)
            Class labels (any type numpy can sort).
        sample_weight : array-like of shape (n,), optional
            Non-negative row weights.

        Returns
        -------
        SDCAClassifier
            The fitted estimator.

        Raises
        ------
        ValueError
            Fewer than two classes with positive weight, bad shapes or weights, NaN / inf in
            numpy input, or an invalid hyperparameter (from the plugin's validator).
        polars.exceptions.ComputeError
            Bad data found by the plugin (for example a NaN in a DataFrame column).
        """
        frame, features, y = self._features(X, y, reset=True)
        check_classification_targets(y)
        classes, codes = np.unique(y, return_inverse=True)
        cw = None
        if self.class_weight is not None:
            per_class = compute_class_weight(
                self.class_weight, classes=classes, y=y, sample_weight=sample_weight
            )
            cw = np.asarray(per_class, dtype=np.float64)[codes]
        weights = self._weights(sample_weight, cw, len(codes))
        present = classes if weights[0] is None else classes[np.bincount(codes, weights[0]) > 0]
        if present.size < 2:
            msg = (
                f"{type(self).__name__} needs samples of at least two classes with positive "
                f"weight; got one class ({present.tolist()})"
            )
            raise ValueError(msg)
        if self.loss in _JOINT_LOSSES:
            labels = {_Y: pl.Series(codes.astype(np.int64))}
            names = ["all"]
        elif classes.size == 2:
            labels = {_Y: pl.Series(np.where(codes == 1, 1.0, -1.0))}
            names = [str(classes[1])]
        else:
            labels = {f"{_Y}{c}": pl.Series(np.where(codes == c, 1.0, -1.0)) for c in range(classes.size)}
            names = [str(c) for c in classes]
        same_classes = hasattr(self, "classes_") and np.array_equal(self.classes_, classes)
        warm = self._usable_warm_start(len(labels), same_classes)
        models = self._fit_models(frame, features, labels, weights, warm)
        self.classes_ = classes
        self.models_ = pl.DataFrame([pl.Series("class", names), models])
        self._set_coefficients(models)
        self._warn_unconverged(self.models_, "class")
        return self

    def _set_coefficients(self, models: pl.Series) -> None:
        coef = models.struct.field("coef")
        intercept = models.struct.field("intercept")
        if self._joint():
            w = np.asarray(coef[0].to_list(), dtype=np.float64)
            b = np.asarray(intercept[0].to_list(), dtype=np.float64)
            if w.shape[0] == 2:
                w, b = (w[1] - w[0])[None, :], b[1:] - b[:1]
        else:
            w = np.asarray(coef.to_list(), dtype=np.float64)
            b = intercept.to_numpy().astype(np.float64)
        self.coef_, self.intercept_ = w, b
        self.n_iter_ = models.struct.field("epochs").to_numpy().astype(np.int64)
        self.duality_gap_ = models.struct.field("gap").to_numpy().astype(np.float64)

    def _scores(self, X: Any, kind: PredictKind) -> _FloatArray:
        """Per-class scores ``(n, k)`` (joint, one-vs-rest) or ``(n, 1)`` (binary)."""
        out = self._predict_frame(X, kind)
        if self._joint():
            k = len(self.classes_)
            return out.to_series().list.to_array(k).to_numpy().astype(np.float64)
        return out.to_numpy().astype(np.float64)

    def decision_function(self, X: Any) -> _FloatArray:
        """Signed scores: shape (n,) for two classes (positive: ``classes_[1]``), else (n, k).

        Parameters
        ----------
        X : array-like, sparse matrix or polars.DataFrame of shape (n, d)
            Features.

        Returns
        -------
        ndarray
            ``x.w + b`` per model.
        """
        scores = self._scores(X, "decision")
        if scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict(self, X: Any) -> npt.NDArray[Any]:
        """Predicted class labels.

        Parameters
        ----------
        X : array-like, sparse matrix or polars.DataFrame of shape (n, d)
            Features.

        Returns
        -------
        ndarray of shape (n,)
            The class with the largest score (two classes: ``classes_[1]`` when the
            decision is positive).
        """
        scores = self.decision_function(X)
        index = (scores > 0).astype(np.intp) if scores.ndim == 1 else scores.argmax(axis=1)
        return np.asarray(self.classes_[index])

    def _has_proba(self) -> bool:
        return self.loss in _PROBA_LOSSES

    @available_if(_has_proba)  # type: ignore[untyped-decorator]
    def predict_proba(self, X: Any) -> _FloatArray:
        """Class probabilities (losses "logistic" and "multinomial" only).

        "logistic": the sigmoid of the decision; with more than two classes the one-vs-rest
        probabilities are normalized to sum to one (``LogisticRegression(multi_class="ovr")``).
        "multinomial": the softmax of the class scores.

        Parameters
        ----------
        X : array-like, sparse matrix or polars.DataFrame of shape (n, d)
            Features.

        Returns
        -------
        ndarray of shape (n, k)
            Probabilities in ``classes_`` order.
        """
        p = self._scores(X, "proba")
        if p.shape[1] == 1:
            return np.hstack([1.0 - p, p])
        return p if self._joint() else p / p.sum(axis=1, keepdims=True)

    @available_if(_has_proba)  # type: ignore[untyped-decorator]
    def predict_log_proba(self, X: Any) -> _FloatArray:
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like, sparse matrix or polars.DataFrame of shape (n, d)
            Features.

        Returns
        -------
        ndarray of shape (n, k)
            Log-probabilities in ``classes_`` order.
        """
        p: _FloatArray = self.predict_proba(X)
        with np.errstate(divide="ignore"):
            return np.log(p)


class SDCARegressor(RegressorMixin, _SDCAModel):  # type: ignore[misc]
    """Linear regression trained by stochastic dual coordinate ascent in the Rust plugin.

    Parameters
    ----------
    loss : {"squared", "absolute", "epsilon_insensitive", "quantile"}, default="squared"
        ``(a - y)^2 / 2``, ``|a - y|``, ``max(0, |a - y| - epsilon)`` or the pinball loss.
    l2, C, l1, smoothing, epsilon, quantile, solver, sampling, tol, max_epochs, check_every, \
fit_intercept, intercept_scaling, max_seconds, warm_start, random_state
        As for :class:`SDCAClassifier`. With ``loss="squared"``, ``C`` gives
        ``Ridge(alpha=1/C)`` (``l2 = alpha / n``) up to the regularized intercept.

    Attributes
    ----------
    coef_ : ndarray of shape (d,)
        Weights.
    intercept_ : float
        Intercept (0.0 without ``fit_intercept``).
    n_iter_ : int
        Epochs run.
    duality_gap_ : float
        Certified duality gap ``P - D``.
    models_ : polars.DataFrame
        One row, column ``model``: the plugin's model struct.
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of shape (d,)
        Feature column names, when fitted on a Polars DataFrame.

    Examples
    --------
    >>> import polars as pl
    >>> from polars_sdca.sklearn import SDCARegressor
    >>> X = pl.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "b": [1.0, 0.0, 1.0, 0.0]})
    >>> reg = SDCARegressor(l2=1e-4, tol=1e-10, max_epochs=2000).fit(X, [1.0, 3.0, 5.0, 7.0])
    >>> reg.coef_.round(2).tolist(), round(reg.intercept_, 2)
    ([2.0, 0.0], 1.0)
    >>> reg.predict(pl.DataFrame({"a": [10.0], "b": [0.0]})).round(2).tolist()
    [21.0]
    """

    coef_: _FloatArray
    intercept_: float
    n_iter_: int
    duality_gap_: float

    def __init__(
        self,
        *,
        loss: Loss = "squared",
        l2: float = 1e-4,
        C: float | None = None,
        l1: float = 0.0,
        smoothing: float = 1.0,
        epsilon: float = 0.1,
        quantile: float = 0.5,
        solver: Solver = "auto",
        sampling: Sampling = "permutation",
        tol: float = 1e-6,
        max_epochs: int = 500,
        check_every: int = 1,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        max_seconds: float | None = None,
        warm_start: bool = False,
        random_state: Any = None,
    ) -> None:
        self.loss = loss
        self.l2 = l2
        self.C = C
        self.l1 = l1
        self.smoothing = smoothing
        self.epsilon = epsilon
        self.quantile = quantile
        self.solver = solver
        self.sampling = sampling
        self.tol = tol
        self.max_epochs = max_epochs
        self.check_every = check_every
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_seconds = max_seconds
        self.warm_start = warm_start
        self.random_state = random_state

    def _y_checks(self) -> dict[str, Any]:
        return {"y_numeric": True}

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> SDCARegressor:
        """Fit the model.

        Parameters
        ----------
        X : array-like, sparse matrix or polars.DataFrame of shape (n, d)
            Features.
        y : array-like of shape (n,)
            Real targets.
        sample_weight : array-like of shape (n,), optional
            Non-negative row weights.

        Returns
        -------
        SDCARegressor
            The fitted estimator.

        Raises
        ------
        ValueError
            A classification loss, bad shapes or weights, NaN / inf in numpy input, or an
            invalid hyperparameter (from the plugin's validator).
        polars.exceptions.ComputeError
            Bad data found by the plugin (for example a NaN in a DataFrame column).
        """
        if self.loss in _CLASSIFICATION_LOSSES:
            msg = (
                f"loss {self.loss!r} is a classification loss; use SDCAClassifier, or one of "
                f"{', '.join(_REGRESSION_LOSSES)}"
            )
            raise ValueError(msg)
        frame, features, y = self._features(X, y, reset=True)
        weights = self._weights(sample_weight, None, len(y))
        warm = self._usable_warm_start(1)
        models = self._fit_models(frame, features, {_Y: pl.Series(y, dtype=pl.Float64)}, weights, warm)
        self.models_ = models.to_frame()
        model = models[0]
        self.coef_ = np.asarray(model["coef"], dtype=np.float64)
        self.intercept_ = float(model["intercept"])
        self.n_iter_ = int(model["epochs"])
        self.duality_gap_ = float(model["gap"])
        self._warn_unconverged(self.models_, None)
        return self

    def predict(self, X: Any) -> _FloatArray:
        """Predicted targets ``x.w + b``.

        Parameters
        ----------
        X : array-like, sparse matrix or polars.DataFrame of shape (n, d)
            Features.

        Returns
        -------
        ndarray of shape (n,)
            Predictions.
        """
        return self._predict_frame(X, "decision").to_series().to_numpy().astype(np.float64)


class _CrossValidated:
    """The cross-validation of :class:`SDCAClassifierCV` and :class:`SDCARegressorCV`: the
    grid and folds become :func:`polars_sdca.fit_cv` options, and the refit models come back
    for the plain estimators' plumbing (coefficients, predictions, warnings)."""

    Cs: int | Sequence[float] | None
    l1s: int | Sequence[float] | None
    l1_min_ratio: float
    l1_ratio: float | Sequence[float] | None
    l1: float
    loss: Loss
    cv: Any
    scoring: Scoring
    select: CvSelect
    n_features_in_: int
    cv_results_: pl.Series
    _total_weight: float
    _options: Any  # the plain estimator's options at a total weight
    C: float | None = None  # the grid replaces it; the plain estimators' plumbing reads l2 then
    warm_start = False
    _c_with_ratios = False
    """Whether ``Cs`` takes mixings (``LogisticRegressionCV``'s grid; the classifier)."""
    _grid_ratios: list[float] | None
    _picks: list[tuple[int, int]]
    _ratio_values: _FloatArray
    _ratio_scores: list[_FloatArray]

    def _fit_models(
        self,
        frame: pl.DataFrame,
        features: str | list[str],
        labels: dict[str, pl.Series],
        weights: tuple[_FloatArray | None, float],
        warm: pl.Series | None,
    ) -> pl.Series:
        self._total_weight = weights[1]
        return self._cv_models(self._options(weights[1]), frame, features, labels, weights)

    def _usable_warm_start(self, n_models: int, same_classes: bool = True) -> pl.Series | None:
        return None  # each fit_cv warm-starts along its own path

    def _grids(self, total_weight: float, c_ratios: list[float] | None) -> list[dict[str, Any]]:
        """The grid options of each :func:`polars_sdca.fit_cv` call per label: one grid, or with
        ``Cs`` and mixings (``c_ratios``, the classifier's ``LogisticRegressionCV`` grid) one
        per ratio: ``l1 = r / (C sum_i s_i)`` with ``l2`` tied to it for ``r > 0``, the plain
        ``Cs`` path over ``l2`` (``l1 = 0``) for ``r = 0``."""
        if c_ratios is None:
            return [self._grid(total_weight)]
        Cs = self._c_grid()
        return [
            {"l2": [1.0 / (c * total_weight) for c in Cs], "l1": 0.0}
            if r == 0.0
            else {"l1": [r / (c * total_weight) for c in Cs], "l1_ratio": r}
            for r in c_ratios
        ]

    def _c_grid(self) -> list[float]:
        """The ``C`` values of ``Cs`` (an int: ``LogisticRegressionCV``'s ``logspace(-4, 4, Cs)``)."""
        Cs = self._values("Cs", self.Cs)
        if isinstance(Cs, int):
            Cs = np.logspace(-4, 4, Cs).tolist()
        if not all(c > 0 for c in Cs):
            msg = f"Cs must hold positive numbers, got {Cs!r}"
            raise ValueError(msg)
        return Cs

    def _grid(self, total_weight: float) -> dict[str, Any]:
        """The path's grid options: a list of ``l2 = 1 / (C sum_i s_i)`` for ``Cs`` (an int:
        ``LogisticRegressionCV``'s ``logspace(-4, 4, Cs)``), or ``l1`` values / ``n_l1``."""
        if (self.Cs is None) == (self.l1s is None):
            msg = f"pass a grid in Cs or in l1s (exactly one of them); got Cs={self.Cs!r}, l1s={self.l1s!r}"
            raise ValueError(msg)
        grid: dict[str, Any] = {}
        if self.Cs is not None:
            grid["l2"] = [1.0 / (c * total_weight) for c in self._c_grid()]
        else:
            l1s = self._values("l1s", self.l1s)
            if isinstance(l1s, int):
                grid["n_l1"] = l1s
                grid["l1_min_ratio"] = self.l1_min_ratio
            else:
                grid["l1"] = l1s
        ratios = self._l1_ratios()
        if ratios is not None:
            if self.Cs is not None:
                name = self._l1_ratios_name()
                msg = (
                    f"{name} ties l2 to l1 along an l1 path: use it with an l1s grid, not Cs "
                    "(pass Cs=None and l1s, an int for each ratio's own grid from its l1_max)"
                )
                raise ValueError(msg)
            grid["l1_ratio"] = ratios
        return grid

    def _c_ratios(self) -> list[float] | None:
        """The mixings searched with ``Cs`` (``LogisticRegressionCV(Cs=..., l1_ratios=[...])``,
        the classifier only), checked here as the plugin does not take ``l1_ratio = 0``; None
        for every other grid."""
        ratios = self._l1_ratios()
        if not self._c_with_ratios or self.Cs is None or ratios is None:
            return None
        if self.l1s is not None:
            return None  # _grid refuses both grids
        name = self._l1_ratios_name()
        if isinstance(ratios, numbers.Real):
            ratios = [ratios]
        elif isinstance(ratios, (str, bytes)) or not hasattr(ratios, "__iter__"):
            msg = f"{name} must be a number in [0, 1] or a sequence of them, got {ratios!r}"
            raise TypeError(msg)
        checked: list[float] = []
        for r in ratios:
            if not isinstance(r, numbers.Real) or isinstance(r, bool):
                msg = f"each {name} value must be a number in [0, 1], got {r!r}"
                raise TypeError(msg)
            if not 0.0 <= float(r) <= 1.0:  # NaN too
                msg = (
                    f"{name} got {r}; with Cs each value must be in [0, 1] (0: the L2 penalty, "
                    "1: the L1 penalty)"
                )
                raise ValueError(msg)
            if float(r) in checked:
                msg = f"{name}: {float(r)} is given twice; pass each value once (one path each)"
                raise ValueError(msg)
            checked.append(float(r))
        if not checked:
            msg = f"{name} is empty; pass at least one value in [0, 1], or no {name}"
            raise ValueError(msg)
        if 1.0 in checked and self.loss in _JOINT_LOSSES:
            msg = (
                f"{name} holds 1.0, the L1 penalty alone (l2 = 0), which the joint multiclass "
                f"loss {self.loss!r} cannot fit (it needs l2 > 0); use ratios below 1, or a "
                "one-vs-rest loss such as 'logistic'"
            )
            raise ValueError(msg)
        if self.l1 != 0.0:
            msg = (
                f"l1={self.l1!r} is not used with Cs and {name}: each pair (C, l1_ratio) sets "
                "l1 = l1_ratio / (C sum_i s_i) and l2 = (1 - l1_ratio) / (C sum_i s_i); leave "
                "l1=0, or pass Cs=None and an l1s grid"
            )
            raise ValueError(msg)
        return checked

    def _l1_ratios(self) -> Any:
        """The ``l1_ratio`` option of ``fit_cv`` (one number or a list; None: ``l2`` fixed)."""
        return self.l1_ratio

    def _l1_ratios_name(self) -> str:
        return "l1_ratio"

    @staticmethod
    def _values(name: str, value: Any) -> int | list[float]:
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            if value < 1:
                msg = f"{name} must be a positive number of grid values or a list of values, got {value!r}"
                raise ValueError(msg)
            return int(value)
        try:
            values = [float(v) for v in value]
        except (TypeError, ValueError):
            msg = f"{name} must be an int (number of values) or a sequence of numbers, got {value!r}"
            raise TypeError(msg) from None
        if not values:
            msg = f"{name} is empty; pass at least one value"
            raise ValueError(msg)
        return values

    def _folds(self, labels: dict[str, pl.Series], n: int) -> tuple[dict[str, Any], pl.Series | None]:
        """``folds=`` for an int ``cv``, else a fold column from a splitter's (or an iterable's)
        test sets, which must cover every row once."""
        cv = self.cv
        if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
            k = int(cv)
            if k < 2:
                msg = f"cv must be at least 2 folds, got {k}"
                raise ValueError(msg)
            if n < k:
                msg = f"cv={k} folds need at least {k} samples; got {n} sample(s)"
                raise ValueError(msg)
            return {"folds": k}, None
        # Stratify a splitter on the class codes (one-vs-rest: the +1 column of each row).
        columns = np.column_stack([s.to_numpy() for s in labels.values()])
        y = columns[:, 0] if columns.shape[1] == 1 else columns.argmax(axis=1)
        splits = cv.split(np.zeros((n, 1)), y) if hasattr(cv, "split") else cv
        fold = np.full(n, -1, dtype=np.int64)
        for k, (_, test) in enumerate(splits):
            test = np.asarray(test, dtype=np.intp)
            if (fold[test] >= 0).any():
                msg = "the cv splits' test sets overlap; each row must be held out exactly once"
                raise ValueError(msg)
            fold[test] = k
        if (fold < 0).any():
            msg = f"{int((fold < 0).sum())} row(s) are in no test set of cv; each row must be held out once"
            raise ValueError(msg)
        return {"fold_column": _FOLD}, pl.Series(_FOLD, fold)

    def _cv_models(
        self,
        options: dict[str, Any],
        frame: pl.DataFrame,
        features: str | list[str],
        labels: dict[str, pl.Series],
        weights: tuple[_FloatArray | None, float],
    ) -> pl.Series:
        """One ``fit_cv`` per label column (with ``Cs`` and mixings in the classifier: one per
        label and ratio, joined by :meth:`_join_ratios`), all in one query; keeps their results
        in ``cv_results_`` and returns the refit models."""
        c_ratios = self._c_ratios()
        self._grid_ratios = c_ratios
        base = {**options, "scoring": self.scoring, "select": self.select}
        if isinstance(features, str) and frame[features].dtype == pl.List:
            base["n_features"] = self.n_features_in_
        calls = [{**base, **grid} for grid in self._grids(weights[1], c_ratios)]
        for call in calls:
            if call.get("l1_ratio") is not None:
                call.pop("l2", None)  # tied to l1 along the path
        folds, fold_column = self._folds(labels, frame.height)
        columns = [s.alias(name) for name, s in labels.items()]
        if weights[0] is not None:
            columns.append(pl.Series(_W, weights[0]))
        if fold_column is not None:
            columns.append(fold_column)
        data = frame.with_columns(columns)
        weights_name = None if weights[0] is None else _W
        row = data.select(
            fit_cv(name, features, weights=weights_name, **call, **folds).alias(f"{i}:{j}")
            for i, name in enumerate(labels)
            for j, call in enumerate(calls)
        )
        if c_ratios is None:
            self.cv_results_ = pl.concat([row[f"{i}:0"] for i in range(len(labels))]).alias("cv")
        else:
            parts = [[row[f"{i}:{j}"] for j in range(len(calls))] for i in range(len(labels))]
            refit = {**base, "n_features": base.get("n_features"), "weights": weights_name}
            self.cv_results_ = self._join_ratios(parts, c_ratios, data, features, labels, refit)
        return self.cv_results_.struct.field("model").alias("model")

    def _join_ratios(
        self,
        parts: list[list[pl.Series]],
        ratios: list[float],
        data: pl.DataFrame,
        features: str | list[str],
        labels: dict[str, pl.Series],
        options: dict[str, Any],
    ) -> pl.Series:
        """Each label's ``fit_cv`` structs, one per ratio (the same folds: the same seed and
        labels, or the same fold column), joined into one struct of :func:`polars_sdca.fit_cv`'s
        shape, ``penalty`` "elasticnet": the curves one after the other, the choice over every
        pair by the plugin's rule (:func:`_choose`) and the refit model of the chosen ratio's
        call when it chose the same value (always, for ``select="best"``), else a fit at the
        chosen pair (the one-standard-error rule's bound comes from the best of every ratio)."""
        rows = [[p.to_list()[0] for p in label_parts] for label_parts in parts]
        picks = [
            _choose(
                [r["mean"] for r in label_rows],
                [r["se"] for r in label_rows],
                greater=label_rows[0]["scoring"] in _GREATER_IS_BETTER,
                one_standard_error=self.select == "one_standard_error",
            )
            for label_rows in rows
        ]
        models: dict[int, pl.Series] = {}
        refits: dict[int, pl.Expr] = {}
        fit_options = {k: v for k, v in options.items() if k not in _CV_KEYS and v is not None}
        for i, (name, label_rows, (_, (r, v))) in enumerate(zip(labels, rows, picks, strict=True)):
            own = label_rows[r]
            if own["values"].index(own["chosen"]) == v:
                models[i] = parts[i][r].struct.field("model")
            else:
                value = own["values"][v]
                l1, l2 = (0.0, value) if ratios[r] == 0.0 else (value, (1.0 - ratios[r]) / ratios[r] * value)
                refits[i] = fit(name, features, **{**fit_options, "l1": l1, "l2": l2}).alias(str(i))
        if refits:
            again = data.select(refits.values())
            models.update({i: again[str(i)] for i in refits})
        self._picks = [chosen for _, chosen in picks]
        return pl.concat(
            [
                _joined(models[i].alias("model"), label_rows, ratios, picks[i])
                for i, label_rows in enumerate(rows)
            ]
        ).alias("cv")

    def _cv_attributes(self) -> None:
        """The chosen penalties and ratios, the grid and the fold scores, read from
        ``cv_results_``; with several ``l1_ratio`` values the grid and scores get a leading
        ratio axis (one ratio: none, as scikit-learn squeezes it)."""
        results = self.cv_results_
        rows = results.to_list()
        self.penalty_ = str(rows[0]["penalty"])
        models = results.struct.field("model")
        self.l1_ = models.struct.field("l1").to_numpy().astype(np.float64)
        self.l2_ = models.struct.field("l2").to_numpy().astype(np.float64)
        self.scoring_ = str(rows[0]["scoring"])
        curves = [_curves(row) for row in rows]
        self._chosen_ratios = [row["chosen_l1_ratio"] for row in rows]
        self._ratio_values = curves[0][1]
        self._ratio_scores = [scores for _, _, scores in curves]
        self.values_ = curves[0][1]
        self._fold_scores = [scores for _, _, scores in curves]
        if len(curves[0][0]) == 1:
            self.values_ = self.values_[0]
            self._fold_scores = [scores[0] for scores in self._fold_scores]


_GREATER_IS_BETTER = ("accuracy",)
"""Scorings for which a larger held-out score is better (``Scoring::greater_is_better``)."""
_CV_KEYS = ("scoring", "select", "folds", "fold_column", "l1_ratio", "n_l1", "l1_min_ratio")
"""Options of a ``fit_cv`` call that a plain ``fit`` does not take."""


def _choose(
    means: list[list[float]], ses: list[list[float]], *, greater: bool, one_standard_error: bool
) -> tuple[tuple[int, int], tuple[int, int]]:
    """The plugin's choice over every (path, value) pair (``choose`` in the core's ``cv.rs``):
    the best finite mean, the first in path order then value order on ties; and the pair
    chosen, the best or, by the one-standard-error rule, of the pairs within one standard error
    of the best the one with the smallest value index (nearest its path's top), the better mean
    among pairs at the same index, the first on ties."""

    def better(a: float, b: float) -> bool:
        return a > b if greater else a < b

    def finite(x: float | None) -> bool:
        return x is not None and np.isfinite(x)

    pairs = [(r, v) for r, m in enumerate(means) for v in range(len(m))]
    best: tuple[int, int] | None = None
    for r, v in pairs:
        if finite(means[r][v]) and (best is None or better(means[r][v], means[best[0]][best[1]])):
            best = (r, v)
    if best is None:
        best = (0, 0)
    if not one_standard_error:
        return best, best
    top, se = means[best[0]][best[1]], ses[best[0]][best[1]]
    bound = top - se if greater else top + se
    chosen: tuple[int, int] | None = None
    for r, v in pairs:
        m = means[r][v]
        if not (finite(m) and (m >= bound if greater else m <= bound)):
            continue
        if chosen is None or v < chosen[1] or (v == chosen[1] and better(m, means[chosen[0]][chosen[1]])):
            chosen = (r, v)
    return best, best if chosen is None else chosen


def _joined(
    model: pl.Series,
    rows: list[dict[str, Any]],
    ratios: list[float],
    picks: tuple[tuple[int, int], tuple[int, int]],
) -> pl.Series:
    """One struct of :func:`polars_sdca.fit_cv`'s fields from per-ratio ``rows`` (each one
    ratio's curve) and the pairs ``picks`` (best, chosen): ``l1_ratio`` gives each entry's ratio
    (0.0 for the ``l2`` path), ``values`` its own penalty (``l1``; ``l2`` for ratio 0)."""
    floats = pl.List(pl.Float64)

    def flat(key: str) -> list[float]:
        return [x for row in rows for x in row[key]]

    (rb, vb), (rc, vc) = picks
    n_folds = len(rows[0]["fold_scores"])
    columns = [
        model,
        pl.Series("penalty", ["elasticnet"]),
        pl.Series(
            "l1_ratio", [[r for r, row in zip(ratios, rows, strict=True) for _ in row["values"]]], floats
        ),
        pl.Series("values", [flat("values")], floats),
        pl.Series("mean", [flat("mean")], floats),
        pl.Series("se", [flat("se")], floats),
        pl.Series(
            "fold_scores",
            [[[x for row in rows for x in row["fold_scores"][f]] for f in range(n_folds)]],
            pl.List(floats),
        ),
        pl.Series("best", [rows[rb]["values"][vb]], pl.Float64),
        pl.Series("chosen", [rows[rc]["values"][vc]], pl.Float64),
        pl.Series("best_l1_ratio", [ratios[rb]], pl.Float64),
        pl.Series("chosen_l1_ratio", [ratios[rc]], pl.Float64),
        pl.Series("scoring", [rows[0]["scoring"]]),
    ]
    return pl.DataFrame(columns).to_struct("cv")


def _curves(row: dict[str, Any]) -> tuple[list[float | None], _FloatArray, _FloatArray]:
    """One :func:`polars_sdca.fit_cv` struct's curves: the ratios in the order given, the grid
    ``(n_ratios, n_values)`` and the fold scores ``(n_ratios, n_folds, n_values)``, NaN-padded
    where a path's grid is shorter (a path whose ``l1_max`` is 0 has one value). The pairs of a
    path are consecutive and ratios are distinct, so each run of one ratio is a path."""
    ratios = row["l1_ratio"]
    starts = [i for i in range(len(ratios)) if i == 0 or ratios[i] != ratios[i - 1]]
    ends = [*starts[1:], len(ratios)]
    width = max(e - b for b, e in zip(starts, ends, strict=True))
    folds = np.asarray(row["fold_scores"], dtype=np.float64).reshape(len(row["fold_scores"]), len(ratios))
    values = np.full((len(starts), width), np.nan)
    scores = np.full((len(starts), folds.shape[0], width), np.nan)
    for r, (b, e) in enumerate(zip(starts, ends, strict=True)):
        values[r, : e - b] = row["values"][b:e]
        scores[r, :, : e - b] = folds[:, b:e]
    return [ratios[b] for b in starts], values, scores


class SDCAClassifierCV(_CrossValidated, SDCAClassifier):
    """:class:`SDCAClassifier` with its penalty chosen by K-fold cross-validation in the plugin
    (scikit-learn's ``LogisticRegressionCV``).

    Each one-vs-rest fit (or the one joint multiclass fit) is one :func:`polars_sdca.fit_cv`:
    the path over the grid on each fold's training rows, warm-started value to value, the
    held-out score of every value, the choice (best mean, or the one-standard-error rule) and
    the refit on all rows. All fits run in one Polars query.

    ``Cs`` with ``l1_ratios`` is ``LogisticRegressionCV``'s elastic-net grid: the pair ``(C,
    r)`` is ``l1 = r / (C sum_i s_i)``, ``l2 = (1 - r) / (C sum_i s_i)`` (scikit-learn's ``C
    sum_i s_i phi + r ||w||_1 + (1 - r) ||w||^2 / 2`` divided by ``C sum_i s_i``). Each ratio
    ``r > 0`` is then one ``fit_cv`` over the ``l1`` values ``r / (C sum_i s_i)`` with ``l2``
    tied to ``l1`` by ``r``, ``r = 0`` the plain ``Cs`` path over ``l2``; they run in one
    query on the same folds, and the pair is chosen over every ratio's curve by the plugin's
    rule (the best mean, the first ratio given, then the smallest ``C``, on ties). Each curve
    is the single-ratio call's, bit for bit, and so is the refit model (the chosen ratio's
    call refits it; only when the one-standard-error rule picks another value than that call
    did is the model fitted again, at the chosen pair).

    Parameters
    ----------
    Cs : int or sequence of float, default=10
        Grid of ``C`` (``l2 = 1 / (C sum_i s_i)``, ``l1`` fixed; with ``l1_ratios``, as
        above): an int ``k`` is ``LogisticRegressionCV``'s ``numpy.logspace(-4, 4, k)``. Set
        ``Cs=None`` and ``l1s`` for an ``l1`` path instead. Every fold fits the refit's
        penalties (the mean-loss objective's, held fixed across folds as ``LassoCV`` holds
        ``alpha``): in scikit-learn's terms a fold with ``n_train`` of the ``n`` rows runs at
        ``C n / n_train``, where ``LogisticRegressionCV`` runs every fold at ``C``.
    l1s : int or sequence of float, optional
        Grid of ``l1`` (``l2`` fixed): an int ``k`` is ``k`` values from the exact ``l1_max``
        (the smallest ``l1`` whose model is zero) down to ``l1_max * l1_min_ratio``.
    l1_min_ratio : float, default=1e-3
        The smallest computed ``l1`` over ``l1_max`` (``l1s`` an int).
    l1_ratio : float or sequence of float, optional
        The elastic-net mixing of scikit-learn. With ``Cs``: each value in ``[0, 1]``, the
        pairs ``(C, l1_ratio)`` as above (a number: one ratio, the scores without a ratio
        axis). With ``l1s`` (each value in ``(0, 1]``): along the ``l1s`` path ``l2 = l1 (1 -
        l1_ratio) / l1_ratio`` instead of the fixed ``l2``, a list searching the pairs
        ``(l1_ratio, l1)``, one path per ratio on the same folds (as ``l1_ratios``).
    l1_ratios : sequence of float, optional
        ``LogisticRegressionCV``'s name for a list of mixings (pass ``l1_ratio`` or
        ``l1_ratios``, not both). With ``Cs`` (each in ``[0, 1]``, ``0`` the L2 penalty and
        ``1`` the L1 penalty): the grid of pairs ``(C, l1_ratio)`` above; the ``l1``
        hyperparameter must stay 0. With ``Cs=None`` and ``l1s`` (each in ``(0, 1]``): each
        ratio runs its own ``l1s`` path, from its own exact ``l1_max`` when ``l1s`` is an int,
        over the same folds. The pair with the best mean score (or the one-standard-error
        rule's) is refit.
    cv : int, cross-validation splitter or iterable, default=5
        Number of folds (drawn from ``random_state``, stratified by class), or a splitter /
        iterable of ``(train, test)`` whose test sets hold each row once.
    scoring : {"auto", "log_loss", "accuracy", "squared_error", "absolute_error", "hinge"}, \
default="auto"
        The held-out score (see :func:`polars_sdca.fit_cv`; auto: log-loss for "logistic" and
        "multinomial", accuracy for the other classification losses).
    select : {"best", "one_standard_error"}, default="best"
        The best mean score, or the largest penalty within one standard error of it.
    loss, l2, l1, smoothing, epsilon, quantile, solver, sampling, tol, max_epochs, \
check_every, fit_intercept, intercept_scaling, max_seconds, class_weight, random_state
        As for :class:`SDCAClassifier`; ``l2`` is the fixed ``l2`` of an ``l1`` path and ``l1``
        the fixed ``l1`` of a ``C`` path.

    Attributes
    ----------
    C_ : ndarray of shape (n_fits,)
        ``C`` of each refit model: with ``Cs`` and ``l1_ratios`` the chosen entry of ``Cs_``;
        else ``1 / (l2_ sum_i s_i)`` (inf when ``l2_`` is 0).
    Cs_ : ndarray of shape (n_Cs,)
        The ``C`` grid, increasing (``C`` paths; else None).
    l1_, l2_ : ndarray of shape (n_fits,)
        The penalties of each refit model.
    l1_ratio_ : ndarray of shape (n_fits,) or None
        The ``l1_ratio`` chosen for each refit model (``l1_ / (l1_ + l2_)``); None without
        ``l1_ratio`` / ``l1_ratios``.
    l1_ratios_ : ndarray of shape (n_l1_ratios,) or None
        The mixings searched, in the order given (None without ``l1_ratio`` / ``l1_ratios``;
        ``LogisticRegressionCV`` has ``[None]`` there).
    penalty_ : {"l1", "l2", "elasticnet"}
        The penalty the path ran over; "elasticnet" for ``Cs`` with ``l1_ratios`` (each
        ratio's own: ``l1``, or ``l2`` for ratio 0).
    values_ : ndarray of shape (n_values,) or (n_l1_ratios, n_values)
        Its grid, decreasing (the columns of ``scores_``), of the first fit; one row per ratio
        with several ``l1_ratios`` (each ratio's own grid; NaN-padded if one is shorter). With
        ``Cs`` and ``l1_ratios`` row ``i`` is ``l1_ratios_[i] / (Cs_ sum_i s_i)`` (``1 / (Cs_
        sum_i s_i)`` for ratio 0).
    scores_ : dict
        Class label to an array of held-out scores (``scoring_``; for "accuracy" larger is
        better, for the losses smaller): ``(n_folds, n_values)``; with several ``l1s`` ratios
        ``(n_l1_ratios, n_folds, n_values)`` (each ratio its own grid); with ``Cs`` and
        ``l1_ratios`` ``(n_folds, n_Cs, n_l1_ratios)``, ``LogisticRegressionCV``'s (legacy)
        layout with the columns in ``Cs_`` order. Two classes: one key, ``classes_[1]``;
        joint losses: every class maps to the one joint fit's scores. Unlike
        ``LogisticRegressionCV``, whose scores are scikit-learn scorers (``neg_log_loss``,
        larger is better), a loss score here is the mean loss, and one-vs-rest fits choose
        per class (``LogisticRegressionCV`` now fits one multinomial model).
    scoring_ : str
        The scoring used.
    cv_results_ : polars.Series
        One :func:`polars_sdca.fit_cv` struct per fit (``mean``, ``se``, ``best``, ``chosen``);
        with ``Cs`` and ``l1_ratios`` the ratios' structs joined into one of the same fields
        (``penalty`` "elasticnet", ``l1_ratio`` 0.0 for the ``l2`` path).
    classes_, coef_, intercept_, n_iter_, duality_gap_, models_, n_features_in_, \
feature_names_in_
        As for :class:`SDCAClassifier`, of the refit models.

    Examples
    --------
    >>> import numpy as np
    >>> from polars_sdca.sklearn import SDCAClassifierCV
    >>> X = np.linspace(-3, 3, 60)[:, None]
    >>> y = np.where(X[:, 0] + np.sin(7 * X[:, 0]) > 0, "yes", "no")
    >>> clf = SDCAClassifierCV(Cs=5, cv=3).fit(X, y)
    >>> clf.Cs_.tolist()
    [0.0001, 0.01, 1.0, 100.0, 10000.0]
    >>> clf.scores_["yes"].shape, bool(clf.C_[0] in clf.Cs_)
    ((3, 5), True)
    >>> clf.predict([[-2.0], [2.0]]).tolist()
    ['no', 'yes']

    Elastic-net mixings searched with the ``l1`` grid (``LogisticRegressionCV``'s
    ``l1_ratios``):

    >>> clf = SDCAClassifierCV(Cs=None, l1s=6, l1_ratios=[0.3, 1.0], cv=3).fit(X, y)
    >>> clf.scores_["yes"].shape, clf.values_.shape, bool(clf.l1_ratio_[0] in (0.3, 1.0))
    ((2, 3, 6), (2, 6), True)

    ``LogisticRegressionCV(Cs=4, l1_ratios=[0, 0.5, 1])``: the grid of pairs ``(C, l1_ratio)``,
    scores ``(n_folds, n_Cs, n_l1_ratios)``:

    >>> clf = SDCAClassifierCV(Cs=4, l1_ratios=[0.0, 0.5, 1.0], cv=3).fit(X, y)
    >>> clf.scores_["yes"].shape, clf.Cs_.shape, clf.l1_ratios_.tolist()
    ((3, 4, 3), (4,), [0.0, 0.5, 1.0])
    >>> C = clf.C_[0]
    >>> bool(C in clf.Cs_), bool(np.isclose(clf.l1_[0] + clf.l2_[0], 1 / (C * len(y))))
    (True, True)
    """

    C_: _FloatArray
    Cs_: _FloatArray | None
    l1_: _FloatArray
    l2_: _FloatArray
    l1_ratio_: _FloatArray | None
    l1_ratios_: _FloatArray | None
    penalty_: str
    values_: _FloatArray
    scores_: dict[Any, _FloatArray]
    scoring_: str
    _c_with_ratios = True

    def __init__(
        self,
        *,
        Cs: int | Sequence[float] | None = 10,
        l1s: int | Sequence[float] | None = None,
        l1_min_ratio: float = 1e-3,
        l1_ratio: float | Sequence[float] | None = None,
        l1_ratios: Sequence[float] | None = None,
        cv: Any = 5,
        scoring: Scoring = "auto",
        select: CvSelect = "best",
        loss: Loss = "logistic",
        l2: float = 1e-4,
        l1: float = 0.0,
        smoothing: float = 1.0,
        epsilon: float = 0.1,
        quantile: float = 0.5,
        solver: Solver = "auto",
        sampling: Sampling = "permutation",
        tol: float = 1e-6,
        max_epochs: int = 500,
        check_every: int = 1,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        max_seconds: float | None = None,
        class_weight: dict[Any, float] | Literal["balanced"] | None = None,
        random_state: Any = None,
    ) -> None:
        self.Cs = Cs
        self.l1s = l1s
        self.l1_min_ratio = l1_min_ratio
        self.l1_ratio = l1_ratio
        self.l1_ratios = l1_ratios
        self.cv = cv
        self.scoring = scoring
        self.select = select
        self.loss = loss
        self.l2 = l2
        self.l1 = l1
        self.smoothing = smoothing
        self.epsilon = epsilon
        self.quantile = quantile
        self.solver = solver
        self.sampling = sampling
        self.tol = tol
        self.max_epochs = max_epochs
        self.check_every = check_every
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_seconds = max_seconds
        self.class_weight = class_weight
        self.random_state = random_state

    def _l1_ratios(self) -> Any:
        if self.l1_ratios is None:
            return self.l1_ratio
        if self.l1_ratio is not None:
            msg = (
                f"pass the elastic-net mixings in l1_ratio or in l1_ratios, not both; got "
                f"l1_ratio={self.l1_ratio!r}, l1_ratios={self.l1_ratios!r}"
            )
            raise ValueError(msg)
        if isinstance(self.l1_ratios, numbers.Real):
            msg = f"l1_ratios must be a sequence of numbers in (0, 1] (one: [x]), got {self.l1_ratios!r}"
            raise TypeError(msg)
        return self.l1_ratios

    def _l1_ratios_name(self) -> str:
        return "l1_ratio" if self.l1_ratios is None else "l1_ratios"

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> SDCAClassifierCV:
        """Cross-validate the grid and refit, in one Polars query.

        Parameters
        ----------
        X : array-like, sparse matrix or polars.DataFrame of shape (n, d)
            Features.
        y : array-like of shape (n,)
            Class labels.
        sample_weight : array-like of shape (n,), optional
            Non-negative row weights (they weight the fits and the held-out scores).

        Returns
        -------
        SDCAClassifierCV
            The fitted estimator.

        Raises
        ------
        ValueError
            As :meth:`SDCAClassifier.fit`; a bad grid or ``cv``, fewer rows than folds.
        polars.exceptions.ComputeError
            Bad data found by the plugin, or a fold whose training rows hold a single class.
        """
        super().fit(X, y, sample_weight)
        self._cv_attributes()
        ratios = self._l1_ratios()
        with_ratio = ratios is not None
        self.l1_ratio_ = np.asarray(self._chosen_ratios, dtype=np.float64) if with_ratio else None
        listed = with_ratio and not isinstance(ratios, numbers.Real)
        self.l1_ratios_ = np.asarray(ratios, dtype=np.float64).reshape(-1) if with_ratio else None
        fold_scores = self._fold_scores
        if self._grid_ratios is not None:
            # LogisticRegressionCV's grid: the same C values for every ratio, each ratio's
            # values in decreasing penalty, so increasing C: value index j is Cs_[j].
            self.Cs_ = np.sort(np.asarray(self._c_grid(), dtype=np.float64))
            self.C_ = self.Cs_[[j for _, j in self._picks]]
            if listed:  # (n_folds, n_Cs, n_l1_ratios), scikit-learn's (legacy) layout
                fold_scores = [np.moveaxis(s, 0, -1) for s in self._ratio_scores]
                self.values_ = self._ratio_values
        else:
            with np.errstate(divide="ignore"):
                self.C_ = 1.0 / (self.l2_ * self._total_weight)
            self.Cs_ = 1.0 / (self.values_ * self._total_weight) if self.penalty_ == "l2" else None
        names = self.models_["class"].to_list()
        if names == ["all"]:
            self.scores_ = dict.fromkeys(self.classes_.tolist(), fold_scores[0])
        else:
            keys = [self.classes_[1]] if len(names) == 1 else list(self.classes_)
            self.scores_ = dict(zip(keys, fold_scores, strict=True))
        return self


class SDCARegressorCV(_CrossValidated, SDCARegressor):
    """:class:`SDCARegressor` with its penalty chosen by K-fold cross-validation in the plugin
    (scikit-learn's ``ElasticNetCV`` / ``LassoCV``).

    One :func:`polars_sdca.fit_cv`: the path over the grid on each fold's training rows, the
    held-out score of every value, the choice and the refit on all rows.

    Parameters
    ----------
    l1s : int or sequence of float, default=100
        Grid of ``l1`` (``l2`` fixed; ``l2=0`` is the Lasso, ``LassoCV`` with
        ``alpha = l1``): an int ``k`` is ``k`` values from the exact ``l1_max`` down to
        ``l1_max * l1_min_ratio`` (``LassoCV``'s ``n_alphas`` and ``eps``).
    Cs : int or sequence of float, optional
        A ridge-type grid instead (``l2 = 1 / (C sum_i s_i)``, ``Ridge(alpha=1/C)`` with
        ``loss="squared"``); set ``l1s=None``.
    l1_ratio : float or sequence of float, optional
        ``ElasticNetCV``'s ``l1_ratio`` (each value in ``(0, 1]``): along the ``l1s`` path
        ``l2 = l1 (1 - l1_ratio) / l1_ratio`` instead of the fixed ``l2`` (``alpha = l1 /
        l1_ratio``); the grid starts at that tied problem's exact ``l1_max``. A list searches
        the pairs ``(l1_ratio, l1)``: one warm-started path per ratio, each from its own
        ``l1_max`` (``l1s`` an int), over the same folds, the pair with the best mean score
        (or the one-standard-error rule's) refit. A given ``l1s`` list is the same ``l1``
        values for every ratio (``ElasticNetCV``'s ``alphas`` are ``l1 / l1_ratio``).
    l1_min_ratio, cv, scoring, select
        As for :class:`SDCAClassifierCV` (auto scoring: squared error).
    loss, l2, l1, smoothing, epsilon, quantile, solver, sampling, tol, max_epochs, \
check_every, fit_intercept, intercept_scaling, max_seconds, random_state
        As for :class:`SDCARegressor`.

    Attributes
    ----------
    alpha_ : float
        The chosen value of the penalty the path ran over (``l1_`` for an ``l1`` path;
        ``ElasticNetCV``'s ``alpha_`` is ``l1_ / l1_ratio_ = l1_ + l2_``).
    alphas_ : ndarray of shape (n_values,) or (n_l1_ratios, n_values)
        The grid, decreasing (the columns of ``scores_``); one row per ratio with several
        ``l1_ratio`` values (each its own grid; NaN-padded if one is shorter).
    l1_, l2_ : float
        The refit model's penalties.
    l1_ratio_ : float or None
        The chosen ``l1_ratio`` (None without ``l1_ratio``).
    penalty_ : {"l1", "l2"}
        The penalty the path ran over.
    scores_ : ndarray of shape (n_folds, n_values) or (n_l1_ratios, n_folds, n_values)
        Held-out scores (``scoring_``; for "squared_error" ``ElasticNetCV``'s ``mse_path_``
        with its axes ``(n_l1_ratios, n_alphas, n_folds)`` moved to ``(n_l1_ratios,
        n_folds, n_alphas)``).
    scoring_ : str
        The scoring used.
    cv_results_ : polars.Series
        The :func:`polars_sdca.fit_cv` struct (``mean``, ``se``, ``best``, ``chosen``).
    coef_, intercept_, n_iter_, duality_gap_, models_, n_features_in_, feature_names_in_
        As for :class:`SDCARegressor`, of the refit model.

    Examples
    --------
    >>> import numpy as np
    >>> from polars_sdca.sklearn import SDCARegressorCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 5))
    >>> y = X @ np.array([2.0, 0.0, 0.0, -1.0, 0.0]) + 0.1 * rng.normal(size=80)
    >>> reg = SDCARegressorCV(l1s=20, l2=0.0, cv=4).fit(X, y)
    >>> reg.scores_.shape, reg.alpha_ == reg.l1_
    ((4, 20), True)
    >>> reg.coef_.round(1).tolist()
    [2.0, 0.0, 0.0, -1.0, 0.0]

    Elastic-net mixings searched with the grid (``ElasticNetCV(l1_ratio=[...])``):

    >>> reg = SDCARegressorCV(l1s=20, l1_ratio=[0.1, 0.5, 1.0], cv=4).fit(X, y)
    >>> reg.scores_.shape, reg.alphas_.shape, reg.l1_ratio_ in (0.1, 0.5, 1.0)
    ((3, 4, 20), (3, 20), True)
    >>> bool(np.isclose(reg.l2_, reg.l1_ * (1 - reg.l1_ratio_) / reg.l1_ratio_))
    True
    """

    alpha_: float
    alphas_: _FloatArray
    l1_: Any
    l2_: Any
    l1_ratio_: float | None
    penalty_: str
    values_: _FloatArray
    scores_: Any
    scoring_: str

    def __init__(
        self,
        *,
        l1s: int | Sequence[float] | None = 100,
        Cs: int | Sequence[float] | None = None,
        l1_min_ratio: float = 1e-3,
        l1_ratio: float | Sequence[float] | None = None,
        cv: Any = 5,
        scoring: Scoring = "auto",
        select: CvSelect = "best",
        loss: Loss = "squared",
        l2: float = 1e-4,
        l1: float = 0.0,
        smoothing: float = 1.0,
        epsilon: float = 0.1,
        quantile: float = 0.5,
        solver: Solver = "auto",
        sampling: Sampling = "permutation",
        tol: float = 1e-6,
        max_epochs: int = 500,
        check_every: int = 1,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        max_seconds: float | None = None,
        random_state: Any = None,
    ) -> None:
        self.l1s = l1s
        self.Cs = Cs
        self.l1_min_ratio = l1_min_ratio
        self.l1_ratio = l1_ratio
        self.cv = cv
        self.scoring = scoring
        self.select = select
        self.loss = loss
        self.l2 = l2
        self.l1 = l1
        self.smoothing = smoothing
        self.epsilon = epsilon
        self.quantile = quantile
        self.solver = solver
        self.sampling = sampling
        self.tol = tol
        self.max_epochs = max_epochs
        self.check_every = check_every
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_seconds = max_seconds
        self.random_state = random_state

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> SDCARegressorCV:
        """Cross-validate the grid and refit.

        Parameters
        ----------
        X : array-like, sparse matrix or polars.DataFrame of shape (n, d)
            Features.
        y : array-like of shape (n,)
            Real targets.
        sample_weight : array-like of shape (n,), optional
            Non-negative row weights (they weight the fits and the held-out scores).

        Returns
        -------
        SDCARegressorCV
            The fitted estimator.

        Raises
        ------
        ValueError
            As :meth:`SDCARegressor.fit`; a bad grid or ``cv``, fewer rows than folds.
        polars.exceptions.ComputeError
            Bad data found by the plugin.
        """
        super().fit(X, y, sample_weight)
        self._cv_attributes()
        self.l1_, self.l2_ = float(self.l1_[0]), float(self.l2_[0])
        ratio = self._chosen_ratios[0]
        self.l1_ratio_ = None if ratio is None else float(ratio)
        self.alphas_ = self.values_
        self.alpha_ = self.l1_ if self.penalty_ == "l1" else self.l2_
        self.scores_ = self._fold_scores[0]
        return self
