"""``polars_sdca.crf.CRFTagger``: the sklearn-crfsuite interface on the SDCA CRF.

The swap test runs one sklearn-crfsuite style script twice, with ``sklearn_crfsuite.CRF`` and
with ``CRFTagger`` in its place (the only change), on CoNLL-2003 NER (the first 1,000 training
and 1,000 test sentences, with the feature dicts of the sklearn-crfsuite tutorial), and
compares what the script sees: types and shapes of every output, the attribute names, and the
test accuracy (within 1 point; the models differ on purpose: CRFsuite without
``all_possible_states`` only weights observed (attribute, label) pairs, and 100 L-BFGS
iterations do not reach its optimum).
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import polars as pl
import pytest

import polars_sdca as ps
from polars_sdca import datasets
from polars_sdca.crf import CRFTagger

SWAP_SENTENCES = 1_000


def word_features(sent: list[tuple[str, str]], i: int) -> dict[str, Any]:
    """Token attributes in the style of the sklearn-crfsuite tutorial (strings, bools, floats)."""
    word, pos = sent[i]
    out: dict[str, Any] = {
        "bias": 1.0,
        "word.lower()": word.lower(),
        "word[-3:]": word[-3:],
        "word[-2:]": word[-2:],
        "word.isupper()": word.isupper(),
        "word.istitle()": word.istitle(),
        "word.isdigit()": word.isdigit(),
        "postag": pos,
        "postag[:2]": pos[:2],
    }
    for offset in (-1, 1):
        j = i + offset
        if 0 <= j < len(sent):
            other, other_pos = sent[j]
            out[f"{offset:+d}:word.lower()"] = other.lower()
            out[f"{offset:+d}:word.istitle()"] = other.istitle()
            out[f"{offset:+d}:postag"] = other_pos
        else:
            out["BOS" if offset < 0 else "EOS"] = True
    return out


def sentences(split: str, n: int) -> tuple[list[list[dict[str, Any]]], list[list[str]]]:
    tokens = datasets.load_conll2003(split).filter(pl.col("sentence") < n)  # type: ignore[arg-type]
    grouped = tokens.group_by("sentence", maintain_order=True).agg("word", "pos", "ner")
    X = []
    for words, tags in zip(grouped["word"].to_list(), grouped["pos"].to_list(), strict=True):
        sent = list(zip(words, tags, strict=True))
        X.append([word_features(sent, i) for i in range(len(sent))])
    return X, grouped["ner"].to_list()


def tutorial_script(crf_class: type, data: dict[str, Any]) -> dict[str, Any]:
    """A typical sklearn-crfsuite script; only ``crf_class`` changes between the two runs."""
    crf = crf_class(algorithm="lbfgs", c1=0.0, c2=1.0, max_iterations=100, all_possible_transitions=True)
    fitted = crf.fit(data["X_train"], data["y_train"])
    X_test = data["X_test"]
    return {
        "crf": crf,
        "fit_returns_self": fitted is crf,
        "predict": crf.predict(X_test),
        "predict_equal_lengths": crf.predict([X_test[0], X_test[0]]),
        "predict_single": crf.predict_single(X_test[0]),
        "marginals": crf.predict_marginals(X_test[:20]),
        "marginals_single": crf.predict_marginals_single(X_test[0]),
        "score": crf.score(X_test, data["y_test"]),
        "classes": crf.classes_,
        "attributes": crf.attributes_,
        "state_features": crf.state_features_,
        "transition_features": crf.transition_features_,
    }


@pytest.fixture(scope="module")
def swap() -> dict[str, dict[str, Any]]:
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    X_train, y_train = sentences("train", SWAP_SENTENCES)
    X_test, y_test = sentences("test", SWAP_SENTENCES)
    data = {"X_train": X_train, "y_train": y_train, "X_test": X_test, "y_test": y_test}
    return {"theirs": tutorial_script(sklearn_crfsuite.CRF, data), "ours": tutorial_script(CRFTagger, data)}


def shape_of(value: Any) -> Any:
    """Type structure of an output (types, shapes, dtypes; not the values)."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype, value.shape, shape_of(value.flat[0]))
    if isinstance(value, list):
        return ("list", shape_of(value[0]) if value else None)
    if isinstance(value, dict):
        key, item = next(iter(value.items()))
        return ("dict", shape_of(key), shape_of(item))
    if isinstance(value, tuple):
        return ("tuple", *(shape_of(v) for v in value))
    return type(value).__name__


@pytest.mark.slow
@pytest.mark.parametrize(
    "output",
    [
        "fit_returns_self",
        "predict",
        "predict_equal_lengths",
        "predict_single",
        "marginals",
        "marginals_single",
        "score",
        "classes",
        "attributes",
        "state_features",
        "transition_features",
    ],
)
def test_swap_same_api_behaviour(swap: dict[str, dict[str, Any]], output: str) -> None:
    assert shape_of(swap["ours"][output]) == shape_of(swap["theirs"][output])


@pytest.mark.slow
def test_swap_same_outputs_and_comparable_accuracy(swap: dict[str, dict[str, Any]]) -> None:
    ours, theirs = swap["ours"], swap["theirs"]
    assert ours["fit_returns_self"]
    assert len(ours["predict"]) == len(theirs["predict"])
    assert [len(s) for s in ours["predict"]] == [len(s) for s in theirs["predict"]]
    assert ours["predict_single"] == list(ours["predict"][0])
    assert set(ours["classes"]) == set(theirs["classes"])
    # The same attribute names (python-crfsuite's dict flattening): "word.lower():eu", ...
    assert set(ours["attributes"]) == set(theirs["attributes"])
    assert set(theirs["state_features"]) <= set(ours["state_features"])
    assert set(ours["transition_features"]) == set(theirs["transition_features"])
    for seq in ours["marginals"]:
        for probs in seq:
            assert set(probs) == set(ours["classes"])
            assert sum(probs.values()) == pytest.approx(1.0, abs=1e-12)
    # Marginal argmax and Viterbi agree on almost every token.
    argmax = [max(p, key=p.get) for seq in ours["marginals"] for p in seq]
    viterbi = [t for seq in ours["predict"][:20] for t in seq]
    assert np.mean([a == b for a, b in zip(argmax, viterbi, strict=True)]) > 0.97
    # Comparable accuracy (see the module docstring for why they differ at all).
    assert ours["score"] > 0.9
    assert abs(ours["score"] - theirs["score"]) <= 0.01


@pytest.mark.slow
def test_swap_model_pickles(swap: dict[str, dict[str, Any]]) -> None:
    crf = swap["ours"]["crf"]
    again = pickle.loads(pickle.dumps(crf))
    X = [[{"word.lower()": "london", "postag": "NNP", "bias": 1.0}, {"word.lower()": "calling"}]]
    assert again.predict(X).tolist() == crf.predict(X).tolist()
    assert again.model_["primal"] == crf.model_["primal"]


# --------------------------------------------------------------------------------------
# Small, fast checks
# --------------------------------------------------------------------------------------

X_TOY = [
    [{"w": "Paris", "cap": True}, {"w": "is", "cap": False}, {"w": "nice", "n": 0.5}],
    [{"w": "Rome", "cap": True}, {"w": "rocks", "cap": False}],
    [{"w": "Oslo", "cap": True}],
]
Y_TOY = [["LOC", "O", "O"], ["LOC", "O"], ["LOC"]]


def test_attribute_flattening_matches_python_crfsuite() -> None:
    pycrfsuite = pytest.importorskip("pycrfsuite")
    nested = [
        [{"foo": {"bar": "baz", "spam": 0.5, "egg": ["x", "y"], "ham": {"x": -0.5}}, "on": True}],
        [["a", "b"], {"n": 2, "s": "t"}],
    ]
    crf = CRFTagger(c2=0.1).fit(nested, [["A"], ["A", "B"]])
    expected = {name for xseq in nested for item in pycrfsuite.ItemSequence(xseq).items() for name in item}
    assert set(crf.attributes_ or []) == expected


def test_c2_maps_to_l2_over_sequences() -> None:
    crf = CRFTagger(c2=0.3, tol=1e-10).fit(X_TOY, Y_TOY)
    model = crf.model_
    assert model is not None
    assert model["l2"] == pytest.approx(2 * 0.3 / len(X_TOY))
    assert model["converged"]
    assert crf.predict(X_TOY).tolist() == [["LOC", "O", "O"], ["LOC", "O"], ["LOC"]]


def test_marginals_match_the_plugin() -> None:
    """The tagger's numpy forward-backward equals crf_fit_rows' marginals (Rust) on the fit data."""
    X = [[{"a": 1.0, "b": 0.5}, {"b": 1.0}, {"a": -0.5}], [{"b": -1.0}], [{"a": 2.0}, {"a": 0.5, "b": 0.5}]]
    y = [["P", "Q", "P"], ["Q"], ["R", "P"]]
    crf = CRFTagger(c2=0.05, tol=1e-12, max_iterations=1000).fit(X, y)
    model, names = crf.model_, crf.attributes_
    assert model is not None
    assert names == ["a", "b"]
    frame = pl.DataFrame(
        [
            {
                "s": i,
                "t": tag,
                "features": [{"index": names.index(k), "value": v} for k, v in sorted(item.items())],
            }
            for i, (xseq, yseq) in enumerate(zip(X, y, strict=True))
            for item, tag in zip(xseq, yseq, strict=True)
        ]
    )
    rows = frame.select(
        ps.crf_fit_rows("t", "features", sequence="s", l2=model["l2"], tol=1e-12, max_epochs=1000).alias("r")
    ).unnest("r")
    ours = [[p[label] for label in model["labels"]] for seq in crf.predict_marginals(X) for p in seq]
    np.testing.assert_allclose(ours, rows["marginals"].to_list(), atol=1e-8)


def test_bad_input_raises_clearly() -> None:
    with pytest.raises(ValueError, match="X has 3 sequences but y has 2"):
        CRFTagger().fit(X_TOY, Y_TOY[:2])
    with pytest.raises(ValueError, match="sequence 1: 2 items but 1 labels"):
        CRFTagger().fit(X_TOY, [Y_TOY[0], ["LOC"], Y_TOY[2]])
    with pytest.raises(ValueError, match="algorithm 'ap' optimises another objective"):
        CRFTagger(algorithm="ap").fit(X_TOY, Y_TOY)
    with pytest.raises(ValueError, match="c2 must be a number > 0"):
        CRFTagger(c2=0).fit(X_TOY, Y_TOY)
    with pytest.raises(TypeError, match="an item must be a dict of attributes or a list of strings"):
        CRFTagger().fit([[3]], [["A"]])
    with pytest.raises(ValueError, match="not fitted yet"):
        CRFTagger().predict(X_TOY)
    with pytest.warns(UserWarning, match="c1=0.1 ignored"):
        CRFTagger(c1=0.1).fit(X_TOY, Y_TOY)
    assert CRFTagger().classes_ is None
    assert CRFTagger().state_features_ is None


def test_sklearn_parameter_protocol() -> None:
    from sklearn.base import clone

    crf = CRFTagger(c2=0.25, max_iterations=7)
    copy = clone(crf)
    assert copy.get_params() == crf.get_params()
    assert copy.set_params(c2=0.5).c2 == 0.5
    assert repr(crf) == "CRFTagger(c2=0.25, max_iterations=7)"
    with pytest.raises(ValueError, match="invalid parameter 'lambda_'"):
        crf.set_params(lambda_=1.0)
