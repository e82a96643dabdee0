"""Every copy of the fit options is pinned to the Rust core's schema (``sdca_core::options``).

The schema holds each option's name, kind, default, allowed values and help. The functions take
their defaults and checks from it at run time and the command line builds its flags from it;
what has to be written out for type checkers and scikit-learn (``_typing``, the estimators'
signatures, the docs) is compared with it here, so any drift fails a test.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import polars_sdca
from polars_sdca import _internal, _typing, cli
from polars_sdca.sklearn import SDCAClassifier, SDCAClassifierCV, SDCARegressor, SDCARegressorCV

from references import LOSSES

ROOT = Path(__file__).parents[1]
FIT = {o["name"]: o for o in _internal.fit_options()}
CRF = {o["name"]: o for o in _internal.crf_options()}
PATH = {o["name"]: o for o in _internal.path_options()}
CV = {o["name"]: o for o in _internal.cv_options()}


def _python_types(annotation: Any) -> set[Any]:
    """The runtime types an annotation of ``_typing`` admits (Literal values as their type)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return {type(v) for v in typing.get_args(annotation)}
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return set().union(*(_python_types(a) for a in typing.get_args(annotation)))
    return {origin or annotation}


def _literal_values(annotation: Any) -> set[str]:
    values: set[str] = set()
    for arg in (
        typing.get_args(annotation) if typing.get_origin(annotation) is not typing.Literal else [annotation]
    ):
        if typing.get_origin(arg) is typing.Literal:
            values |= set(typing.get_args(arg))
    return values


@pytest.mark.parametrize(
    ("schema", "typed"),
    [
        (FIT, _typing.FitOptions),
        (CRF, _typing.CrfOptions),
        (FIT | PATH, _typing.PathOptions),
        (FIT | PATH | CV, _typing.CvOptions),
    ],
)
def test_typed_options_match_the_schema(schema: dict[str, dict[str, Any]], typed: Any) -> None:
    names = vars(_typing) | {"Sequence": Sequence}
    hints = typing.get_type_hints(typed, globalns=names, localns=names)
    assert set(hints) == set(schema), "the TypedDict lists the schema's options"
    for name, spec in schema.items():
        admits = _python_types(hints[name])
        expected = {"float": float, "int": int, "bool": bool, "choice": str}.get(spec["kind"])
        if expected is not None:
            assert expected in admits, f"{name}: {hints[name]} does not admit {expected}"
        assert (type(None) in admits) == (spec["default"] is None), f"{name}: optional or not"
        if spec["kind"] == "choice":
            assert _literal_values(hints[name]) == set(spec["choices"]), name


def test_literal_aliases_match_the_schema() -> None:
    aliases = {
        "loss": _typing.Loss,
        "solver": _typing.Solver,
        "sampling": _typing.Sampling,
        "group_norm": _typing.GroupNorm,
        "output": _typing.PdproxOutput,
        "pdprox_variant": _typing.PdproxVariant,
        "null_policy": _typing.NullPolicy,
        "on_error": _typing.OnError,
        "scoring": _typing.Scoring,
        "select": _typing.CvSelect,
    }
    for name, alias in aliases.items():
        assert set(typing.get_args(alias)) == set((FIT | CV)[name]["choices"]), name


def test_functions_take_the_schema_defaults() -> None:
    from polars_sdca import functions

    assert functions._FIT_OPTIONS == FIT
    assert functions._CRF_OPTIONS == CRF
    assert functions._PATH_OPTIONS == PATH
    assert functions._CV_OPTIONS == CV
    # An option the schema does not know is refused, naming the valid ones.
    with pytest.raises(TypeError, match="unknown option"):
        polars_sdca.fit("y", ["x"], not_an_option=1)  # type: ignore[call-arg]


def test_cli_has_a_flag_per_option_with_help_and_choices() -> None:
    fit_parser = cli._parser()._subparsers._group_actions[0].choices["fit"]  # type: ignore[union-attr]
    actions = {a.dest: a for a in fit_parser._actions}
    for name, spec in FIT.items():
        if name in cli._NOT_FLAGS and name != "weights":
            continue
        action = actions[cli._dest(name)]
        assert action.help, name
        if spec["kind"] == "choice":
            assert list(action.choices) == spec["choices"], name
    assert "--max-memory" in fit_parser.format_help()


def test_estimator_parameters_match_the_schema() -> None:
    # Estimator parameters not in the schema, and schema options the estimators do not take.
    own = {"C", "class_weight", "warm_start", "random_state"}
    not_taken = {
        "seed": "random_state (scikit-learn's name)",
        "weights": "fit(sample_weight=...)",
        "warm_start": "a bool reusing the previous fit (scikit-learn's meaning)",
        "groups": "the expression API (pdprox group penalties)",
        "group_norm": "the expression API",
        "output": "the expression API",
        "pdprox_variant": "the expression API",
        "n_features": "taken from X",
        "null_policy": "X and y are checked by scikit-learn",
        "on_error": "one fit: errors raise",
        "shrinking": "the default",
        "max_memory": "the expression API",
    }
    # The cross-validated estimators: C replaced by the grid, warm starts along each path.
    cv_own = (own - {"C", "warm_start"}) | {"Cs", "l1s", "cv"}
    cv_not_taken = not_taken | {
        "C": "the grid Cs",
        "folds": "cv (an int)",
        "fold_column": "cv (a splitter or (train, test) pairs)",
        "n_l1": "l1s (an int)",
        "n_l2": "Cs (an int: logspace(-4, 4, Cs))",
        "l2_min_ratio": "Cs",
        "screening": "the default (on where it applies)",
    }
    for estimator, schema, mine, skipped in (
        (SDCAClassifier, FIT, own, not_taken),
        (SDCARegressor, FIT, own, not_taken),
        # LogisticRegressionCV's name for a list of l1_ratio values.
        (SDCAClassifierCV, FIT | PATH | CV, cv_own | {"l1_ratios"}, cv_not_taken),
        (SDCARegressorCV, FIT | PATH | CV, cv_own, cv_not_taken),
    ):
        params = inspect.signature(estimator.__init__).parameters
        assert mine - {"class_weight"} <= set(params), f"{estimator.__name__} lacks {mine - set(params)}"
        for name, p in params.items():
            if name == "self" or name in mine:
                continue
            assert name in schema, f"{estimator.__name__}.{name} is not a schema option"
            if name != "loss":  # the regressors default to "squared"
                assert p.default == schema[name]["default"], f"{estimator.__name__}.{name}"
        missing = set(schema) - set(params) - set(skipped)
        assert not missing, f"{estimator.__name__} lacks {missing}"


def test_docs_name_every_option() -> None:
    doc = polars_sdca.fit.__doc__ or ""
    readme = (ROOT / "README.md").read_text()
    for name in FIT:
        assert re.search(rf"\b{name}\b", doc), f"fit's docstring does not mention {name}"
        assert f"`{name}`" in readme, f"the README does not mention {name}"
    for name in PATH:
        assert re.search(rf"\b{name}\b", polars_sdca.fit_path.__doc__ or ""), f"fit_path's docstring: {name}"
        assert f"`{name}`" in readme, f"the README does not mention {name}"
    for name in CV:
        assert re.search(rf"\b{name}\b", polars_sdca.fit_cv.__doc__ or ""), f"fit_cv's docstring: {name}"
        assert f"`{name}`" in readme, f"the README does not mention {name}"
    crf_doc = polars_sdca.crf_fit.__doc__ or ""
    for name in CRF:
        assert re.search(rf"\b{name}\b", crf_doc), f"crf_fit's docstring does not mention {name}"


def test_stub_lists_the_module() -> None:
    stub = (ROOT / "python" / "polars_sdca" / "_internal.pyi").read_text()
    for name in re.findall(r"^(?:def|class) (\w+)", stub, flags=re.MULTILINE):
        assert hasattr(_internal, name), name
    for name in (
        "fit_options",
        "crf_options",
        "path_options",
        "cv_options",
        "check_fit_kwargs",
        "check_crf_kwargs",
        "check_path_kwargs",
    ):
        assert f"def {name}(" in stub, name


def test_reference_losses_are_product_losses() -> None:
    scalar = [c for c in FIT["loss"]["choices"] if not c.startswith(("multi",))]
    assert set(LOSSES) == set(scalar)
