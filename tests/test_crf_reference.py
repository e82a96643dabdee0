"""CRF optima against independent references on real data (issue 5 acceptance).

* OCR letters (every 23rd word: 299 words, 2,268 letters, all 26 labels; the file lists the
  copies of a word together, so its first 300 words have only 13 labels; dense 128-pixel
  attributes): our optimum against scipy's L-BFGS on
  the same objective, written here in numpy (:class:`ChainObjective`, vectorised forward-
  backward) and certified by its gradient norm.
* CoNLL-2003 NER (the first 500 training sentences; the full set is compared in
  ``benchmarks/crf_peers.py``): our optimum against CRFsuite's L-BFGS (python-crfsuite) with
  the same attributes, and the test-split token accuracy and entity F1 of both models.

Scaling (read in CRFsuite's ``lib/crf/src/train_lbfgs.c``, ``lbfgs_evaluate``): CRFsuite
minimises ``f(w) = sum_i -log p(y_i | x_i) + c2 ||w||^2``, the log-loss *summed* over the
training sequences plus ``c2`` (no 1/2) times the squared norm; its gradient adds
``2 c2 w``. Our ``P(w) = (1/n) sum_i -log p(y_i | x_i) + (l2/2) ||w||^2``, so ``f = n P``
with ``c2 = l2 n / 2``. The test checks this on CRFsuite's own logged loss.

Same model: CRFsuite with ``feature.possible_states`` and ``feature.possible_transitions``
has one weight per (attribute, label) and per label pair, as we do; our per-label bias, start
and end weights are CRFsuite state features of three extra attributes (on every token, on the
first and on the last token of each sentence), so both solve the same problem.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy.optimize import minimize

import polars_sdca as ps
from polars_sdca import datasets
from polars_sdca.crf import attribute_dicts, entity_scores, token_features

pytestmark = pytest.mark.slow

OCR_STRIDE = 23
OCR_WORDS = 299
NER_SENTENCES = 500
NER_FEATURES: dict[str, Any] = {
    "token": "word",
    "sequence": "sentence",
    "order_by": "position",
    "extra": ["pos", "chunk"],
    "window": 2,
}
# CRFsuite attributes standing for our per-label bias, start and end weights.
BIAS, START, END = "__bias__", "__start__", "__end__"


class ChainObjective:
    """The CRF primal and its gradient, in numpy, independent of the plugin.

    ``P(w) = (l2/2)||w||^2 + (1/n) sum_i [log Z(x_i) - s(x_i, y_i)]`` with
    ``w = [emission (K x A) | bias (K) | start (K) | end (K) | transition (K x K)]``. Forward-
    backward runs in log space over all sequences of one length at once.
    """

    def __init__(self, x: Any, tags: np.ndarray, lengths: np.ndarray, n_labels: int, l2: float) -> None:
        self.x, self.l2 = x, l2
        self.k, self.a, self.n = n_labels, x.shape[1], len(lengths)
        lengths = np.asarray(lengths, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        self.first, self.last = starts, starts + lengths - 1
        self.onehot = np.eye(n_labels)[tags]
        self.buckets = [starts[lengths == t][:, None] + np.arange(t) for t in np.unique(lengths)]
        inside = np.ones(len(tags) - 1, dtype=bool)
        inside[self.last[:-1]] = False  # no edge from a sequence's last token to the next one
        self.edges = np.zeros((n_labels, n_labels))
        np.add.at(self.edges, (tags[:-1][inside], tags[1:][inside]), 1.0)
        self.size = n_labels * self.a + 3 * n_labels + n_labels * n_labels

    def unpack(self, w: np.ndarray) -> tuple[np.ndarray, ...]:
        k, ka = self.k, self.k * self.a
        emission = w[:ka].reshape(k, self.a)
        bias, start, end = w[ka : ka + k], w[ka + k : ka + 2 * k], w[ka + 2 * k : ka + 3 * k]
        return emission, bias, start, end, w[ka + 3 * k :].reshape(k, k)

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        emission, bias, start, end, trans = self.unpack(w)
        u = np.asarray(self.x @ emission.T) + bias
        u[self.first] += start
        u[self.last] += end
        node, edge, log_z = np.empty_like(u), np.zeros_like(trans), 0.0
        for rows in self.buckets:
            s = u[rows]
            fwd, bwd = np.empty_like(s), np.zeros_like(s)
            fwd[:, 0] = s[:, 0]
            for t in range(1, s.shape[1]):
                fwd[:, t] = s[:, t] + lse(fwd[:, t - 1, :, None] + trans, axis=1)
            for t in range(s.shape[1] - 2, -1, -1):
                bwd[:, t] = lse(trans + (s[:, t + 1] + bwd[:, t + 1])[:, None, :], axis=2)
            lz = lse(fwd[:, -1], axis=1)
            log_z += lz.sum()
            node[rows] = np.exp(fwd + bwd - lz[:, None, None])
            pair = fwd[:, :-1, :, None] + trans + (s[:, 1:] + bwd[:, 1:])[:, :, None, :]
            edge += np.exp(pair - lz[:, None, None, None]).sum(axis=(0, 1))
        truth = (u * self.onehot).sum() + (trans * self.edges).sum()
        diff = node - self.onehot
        grad = np.concatenate(
            [
                np.asarray(self.x.T @ diff).T.ravel(),
                diff.sum(axis=0),
                diff[self.first].sum(axis=0),
                diff[self.last].sum(axis=0),
                (edge - self.edges).ravel(),
            ]
        )
        value = (log_z - truth) / self.n + 0.5 * self.l2 * (w @ w)
        return value, grad / self.n + self.l2 * w

    def certificate(self, w: np.ndarray) -> tuple[float, float]:
        """``P(w)`` and the bound ``P(w) - P* <= ||grad P(w)||^2 / (2 l2)`` (l2-strong convexity)."""
        value, grad = self(w)
        return value, (grad @ grad) / (2 * self.l2)


def lse(a: np.ndarray, axis: int) -> np.ndarray:
    top = a.max(axis=axis, keepdims=True)
    return np.squeeze(top, axis=axis) + np.log(np.exp(a - top).sum(axis=axis))


def flat_weights(model: dict[str, Any]) -> np.ndarray:
    """A fitted model's weights in :class:`ChainObjective`'s layout."""
    parts = [model["emission"], model["bias"], model["start"], model["end"], model["transition"]]
    return np.concatenate([np.ravel(p) for p in parts])


def sequence_lengths(frame: pl.DataFrame, sequence: str) -> np.ndarray:
    """Lengths of the runs of equal ``sequence`` values, in order."""
    return frame.group_by(pl.col(sequence).rle_id(), maintain_order=True).len()["len"].to_numpy()


def test_ocr_letters_loader() -> None:
    letters = datasets.load_ocr_letters()
    assert letters.schema == pl.Schema(
        {
            "word": pl.UInt32,
            "position": pl.UInt32,
            "fold": pl.UInt8,
            "letter": pl.String,
            "pixels": pl.Array(pl.Float64, 128),
        }
    )
    assert (letters.height, letters["word"].n_unique(), letters["letter"].n_unique()) == (52_152, 6_877, 26)
    # The paper's split: folds 0-8 train (6,202 words, 47,010 letters), fold 9 test.
    train = letters.filter(pl.col("fold") != 9)
    assert (train["word"].n_unique(), train.height) == (6_202, 47_010)
    assert "".join(letters.filter(pl.col("word") == 0)["letter"]) == "ommanding"
    assert set(np.unique(np.stack(letters["pixels"].to_numpy()))) == {0.0, 1.0}
    lengths = sequence_lengths(letters, "word")
    assert (lengths.min(), lengths.max()) == (3, 14)


def test_ocr_words_match_scipy_lbfgs() -> None:
    letters = datasets.load_ocr_letters().filter(pl.col("word") % OCR_STRIDE == 0)
    m = letters.select(ps.crf_fit("letter", "pixels", sequence="word", tol=1e-9, max_epochs=2000)).item()
    assert m["converged"]
    assert m["n_sequences"] == OCR_WORDS
    l2 = m["l2"]
    assert l2 == pytest.approx(1 / OCR_WORDS)  # the paper's lambda = 1/n
    tags = np.searchsorted(np.array(m["labels"]), letters["letter"].to_numpy())
    lengths = sequence_lengths(letters, "word")
    x = np.stack(letters["pixels"].to_numpy())
    objective = ChainObjective(x, tags, lengths, len(m["labels"]), l2)
    assert objective.size == 26 * 128 + 3 * 26 + 26 * 26  # 4,082, Table 1 of the paper

    # The objective is the plugin's: at 0 it is mean(T) log K, at our weights our primal.
    assert objective(np.zeros(objective.size))[0] == pytest.approx(
        letters.height / OCR_WORDS * math.log(26), rel=1e-14
    )
    ours = flat_weights(m)
    assert objective(ours)[0] == pytest.approx(m["primal"], rel=1e-12)

    ref = minimize(
        objective,
        np.zeros(objective.size),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 20_000, "maxcor": 30, "gtol": 1e-12, "ftol": 0.0},
    )
    p_ref, bound = objective.certificate(ref.x)
    # The reference is certified: its suboptimality bound is far below the tolerance.
    assert bound <= 1e-10 * p_ref
    # Acceptance: our optimum matches the reference to 1e-6 relative; both lie above P* by at
    # most their certificates (our duality gap, its gradient bound), which is tighter still.
    assert m["primal"] == pytest.approx(p_ref, rel=1e-6)
    assert abs(m["primal"] - p_ref) <= m["gap"] + bound + 1e-13 * p_ref
    # Weights: l2-strong convexity gives ||w - w*|| <= sqrt(2 (P(w) - P*) / l2) for each.
    radius = math.sqrt(2 * m["gap"] / l2) + math.sqrt(2 * bound / l2)
    assert np.linalg.norm(ours - ref.x) <= radius + 1e-9


def crfsuite_sequences(frame: pl.DataFrame, vocab: dict[str, int]) -> list[list[dict[str, float]]]:
    """Our attributes as python-crfsuite items, plus the bias / start / end attributes."""
    out = attribute_dicts(frame, features="features", sequence="sentence", vocabulary=vocab)
    for items in out:
        for item in items:
            item[BIAS] = 1.0
        items[0][START] = 1.0
        items[-1][END] = 1.0
    return out


@pytest.fixture(scope="module")
def ner(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Our fit and CRFsuite's L-BFGS fit on the first 500 CoNLL-2003 training sentences."""
    import pycrfsuite

    train_tokens = datasets.load_conll2003("train").filter(pl.col("sentence") < NER_SENTENCES)
    train, vocab = token_features(train_tokens, **NER_FEATURES)
    test, _ = token_features(datasets.load_conll2003("test"), vocabulary=vocab, **NER_FEATURES)
    m = train.select(
        ps.crf_fit("ner", "features", sequence="sentence", tol=1e-9, max_epochs=1000, n_features=len(vocab))
    ).item()
    l2, n = m["l2"], NER_SENTENCES

    trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
    trainer.set_params(
        {
            "c1": 0.0,
            "c2": l2 * n / 2,
            "feature.minfreq": 0,
            "feature.possible_states": True,
            "feature.possible_transitions": True,
            "max_iterations": 5000,
            "epsilon": 1e-10,
            "period": 20,
            "delta": 1e-13,
        }
    )
    for xseq, yseq in zip(
        crfsuite_sequences(train, vocab),
        train.group_by("sentence", maintain_order=True).agg("ner")["ner"].to_list(),
        strict=True,
    ):
        trainer.append(xseq, yseq)
    path = str(tmp_path_factory.mktemp("crfsuite") / "ner.crfsuite")
    trainer.train(path)
    tagger = pycrfsuite.Tagger()
    tagger.open(path)
    return {
        "train": train,
        "test": test,
        "vocab": vocab,
        "model": m,
        "tagger": tagger,
        "crfsuite_loss": trainer.logparser.iterations[-1]["loss"],
    }


def crfsuite_weights(tagger: Any, labels: list[str], vocab: dict[str, int]) -> np.ndarray:
    """CRFsuite's weights in :class:`ChainObjective`'s layout (absent features are 0)."""
    info = tagger.info()
    k, a = len(labels), len(vocab)
    row = {label: i for i, label in enumerate(labels)}
    emission, extra, trans = np.zeros((k, a)), np.zeros((3, k)), np.zeros((k, k))
    slots = {BIAS: 0, START: 1, END: 2}
    for (attr, label), weight in info.state_features.items():
        if attr in slots:
            extra[slots[attr], row[label]] = weight
        else:
            emission[row[label], vocab[attr]] = weight
    for (src, dst), weight in info.transitions.items():
        trans[row[src], row[dst]] = weight
    return np.concatenate([emission.ravel(), extra.ravel(), trans.ravel()])


def test_ner_optimum_matches_crfsuite_lbfgs(ner: dict[str, Any]) -> None:
    m, train, vocab = ner["model"], ner["train"], ner["vocab"]
    assert m["converged"]
    assert m["n_sequences"] == NER_SENTENCES
    labels = m["labels"]
    tags = np.searchsorted(np.array(labels), train["ner"].to_numpy())
    x = datasets.sparse_to_scipy(train, n_features=len(vocab))
    objective = ChainObjective(x, tags, sequence_lengths(train, "sentence"), len(labels), m["l2"])
    assert objective(flat_weights(m))[0] == pytest.approx(m["primal"], rel=1e-12)

    p_crfsuite, bound = objective.certificate(crfsuite_weights(ner["tagger"], labels, vocab))
    # The scaling f = n P with c2 = l2 n / 2, on CRFsuite's own number (logged with 6 decimals).
    assert ner["crfsuite_loss"] / NER_SENTENCES == pytest.approx(p_crfsuite, abs=1e-6 / NER_SENTENCES)
    # Acceptance: final primal objectives within 1e-4 relative. Both are certified (our gap,
    # CRFsuite's gradient bound), and their difference is within the certificates.
    assert m["primal"] == pytest.approx(p_crfsuite, rel=1e-4)
    assert abs(m["primal"] - p_crfsuite) <= m["gap"] + bound + 1e-12 * p_crfsuite


def test_ner_test_scores_match_crfsuite(ner: dict[str, Any]) -> None:
    test, tagger = ner["test"], ner["tagger"]
    ours = test.select(ps.crf_predict(ner["model"], "features", sequence="sentence")).to_series()
    theirs = [tag for xseq in crfsuite_sequences(test, ner["vocab"]) for tag in tagger.tag(xseq)]
    scored = test.with_columns(ours=ours, theirs=pl.Series(theirs))
    accuracy = {c: float((scored[c] == scored["ner"]).mean()) for c in ("ours", "theirs")}  # type: ignore[arg-type]
    f1 = {
        c: entity_scores(scored, truth="ner", prediction=c, sequence="sentence").row(-1, named=True)["f1"]
        for c in ("ours", "theirs")
    }
    # Acceptance: within 0.3 points. At the same optimum the taggers nearly always agree.
    assert abs(accuracy["ours"] - accuracy["theirs"]) <= 0.003
    assert abs(f1["ours"] - f1["theirs"]) <= 0.003
    assert (scored["ours"] == scored["theirs"]).mean() > 0.999  # type: ignore[operator]
    # A real tagger: far above the all-"O" baseline (83% of the test tokens).
    assert accuracy["ours"] > 0.9
    assert f1["ours"] > 0.5
