"""Shared pieces of the CRF benchmarks (``crf_sampling.py``, ``crf_peers.py``).

* :func:`load_problem` builds the two training sets of the SDCA-for-CRFs paper's kind:
  CoNLL-2003 English NER (sparse CRFsuite-style attributes from
  ``polars_sdca.crf.token_features``) and the OCR letters (dense 128-pixel images, folds 0-8
  for training as in the paper: 6,202 words);
* :func:`primal` is the single, independent numpy implementation of the CRF objective that
  scores every solver's weights (never the value a solver reports about itself);
* :func:`train_crfsuite` runs python-crfsuite on the same problem, recording the wall-clock
  and CPU time of every iteration, and returns its weights in our layout.

Same problem (see ``polars_sdca/crf.py``): CRFsuite minimises ``sum_i -log p(y_i | x_i) +
c2 ||w||^2``, which is ``n`` times ours with ``c2 = l2 n / 2``; ``feature.possible_states``
and ``feature.possible_transitions`` give its model our full emission and transition
blocks, and three extra attributes (every token, first token, last token) stand for our
per-label bias, start and end weights.
"""

from __future__ import annotations

import itertools
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl
import scipy.sparse

from polars_sdca import datasets
from polars_sdca.crf import attribute_dicts, token_features

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
RESULTS = HERE / "results_crf.md"
FloatArray = npt.NDArray[np.float64]

NER_FEATURES: dict[str, Any] = {
    "token": "word",
    "sequence": "sentence",
    "order_by": "position",
    "extra": ["pos", "chunk"],
    "window": 2,
}
# Chunking and part-of-speech tagging on the same CoNLL-2003 training file (tag sets of about
# 20 and 45 labels): the attributes of the NER template without the tag being predicted.
TAGGING_FEATURES: dict[str, dict[str, Any]] = {
    "chunk": {**NER_FEATURES, "extra": ["pos"]},
    "pos": {**NER_FEATURES, "extra": []},
}
# CRFsuite attributes standing for our per-label bias, start and end weights.
BIAS, START, END = "__bias__", "__start__", "__end__"


@dataclass
class Problem:
    """One CRF training set, in the plugin's form and in numpy form."""

    name: str
    frame: pl.DataFrame  # one token per row, sequences contiguous and in order
    tag: str
    features: str  # a sparse List(Struct) column or a dense Array column
    sequence: str
    attributes: list[str]  # attribute names, in index order
    labels: list[str]  # sorted, the plugin's order
    x: Any  # (tokens x attributes) scipy CSR or numpy array
    y: npt.NDArray[np.int64]  # label index per token
    lengths: npt.NDArray[np.int64]

    @property
    def n(self) -> int:
        return len(self.lengths)

    @property
    def size(self) -> int:
        k = len(self.labels)
        return k * len(self.attributes) + 3 * k + k * k

    def describe(self) -> str:
        nnz = self.x.nnz if scipy.sparse.issparse(self.x) else int(np.count_nonzero(self.x))
        return (
            f"{self.n:,} sequences, {self.frame.height:,} tokens, {len(self.labels)} labels, "
            f"{len(self.attributes):,} attributes ({nnz / self.frame.height:.1f} non-zero per token), "
            f"d = {self.size:,} weights"
        )

    def crf_fit_args(self) -> tuple[str, str]:
        return self.tag, self.features


def load_problem(name: str, subset: int | None = None, vocabulary: dict[str, int] | None = None) -> Problem:
    """``"ner"`` (CoNLL-2003 train) or ``"ocr"`` (folds 0-8); ``subset`` keeps the first sequences.

    ``"ner-test"`` is the CoNLL-2003 test split encoded with a training ``vocabulary``;
    ``"chunk"`` and ``"pos"`` tag the CoNLL-2003 training file with its chunk and POS tags.
    """
    if name in ("ner", "ner-test"):
        tokens = datasets.load_conll2003("train" if name == "ner" else "test")
        if subset is not None and name == "ner":
            tokens = tokens.filter(pl.col("sentence") < subset)
        frame, vocab = token_features(tokens, vocabulary=vocabulary, **NER_FEATURES)
        frame = frame.select("sentence", "ner", "features")
        names = [""] * len(vocab)
        for attr, index in vocab.items():
            names[index] = attr
        x: Any = datasets.sparse_to_scipy(frame, n_features=len(vocab))
        tag, features, sequence = "ner", "features", "sentence"
    elif name in TAGGING_FEATURES:
        tokens = datasets.load_conll2003("train")
        if subset is not None:
            tokens = tokens.filter(pl.col("sentence") < subset)
        frame, vocab = token_features(tokens, vocabulary=vocabulary, **TAGGING_FEATURES[name])
        frame = frame.select("sentence", name, "features")
        names = [""] * len(vocab)
        for attr, index in vocab.items():
            names[index] = attr
        x = datasets.sparse_to_scipy(frame, n_features=len(vocab))
        tag, features, sequence = name, "features", "sentence"
    elif name == "ocr":
        letters = datasets.load_ocr_letters().filter(pl.col("fold") != 9)
        if subset is not None:
            letters = letters.filter(pl.col("word").rle_id() < subset)
        frame = letters.select("word", "letter", "pixels")
        names = [f"p{j}" for j in range(128)]
        x = np.ascontiguousarray(np.stack(frame["pixels"].to_numpy()), dtype=np.float64)
        tag, features, sequence = "letter", "pixels", "word"
    else:
        msg = f"unknown problem {name!r}; use 'ner', 'ocr', 'chunk' or 'pos'"
        raise ValueError(msg)
    labels = sorted(frame[tag].unique().to_list())  # the test split has the training labels
    y = np.searchsorted(np.array(labels), frame[tag].to_numpy()).astype(np.int64)
    lengths = frame.group_by(pl.col(sequence).rle_id(), maintain_order=True).len()["len"].to_numpy()
    return Problem(name, frame, tag, features, sequence, names, labels, x, y, lengths.astype(np.int64))


# --------------------------------------------------------------------------------------
# The objective, in numpy
# --------------------------------------------------------------------------------------


def _lse(a: FloatArray, axis: int) -> FloatArray:
    top = a.max(axis=axis, keepdims=True)
    out: FloatArray = np.squeeze(top, axis=axis) + np.log(np.exp(a - top).sum(axis=axis))
    return out


def primal_and_gradient(problem: Problem, w: FloatArray, l2: float) -> tuple[float, FloatArray]:
    """``P(w) = (l2/2)||w||^2 + (1/n) sum_i [log Z(x_i) - s(x_i, y_i)]`` and its gradient.

    ``w`` in our layout: ``[emission (K x A) | bias (K) | start (K) | end (K) | transition
    (K x K)]``. Forward-backward in log space over all sequences of one length at once; the
    gradient is expected minus observed features (plus ``l2 w``).
    """
    k, a = len(problem.labels), len(problem.attributes)
    emission = w[: k * a].reshape(k, a)
    bias, start, end = (w[k * a + j * k : k * a + (j + 1) * k] for j in range(3))
    trans = w[k * a + 3 * k :].reshape(k, k)
    u = np.asarray(problem.x @ emission.T) + bias
    firsts = np.concatenate([[0], np.cumsum(problem.lengths)[:-1]])
    lasts = firsts + problem.lengths - 1
    u[firsts] += start
    u[lasts] += end
    node, edge, log_z = np.empty_like(u), np.zeros_like(trans), 0.0
    for length in np.unique(problem.lengths):
        rows = firsts[problem.lengths == length][:, None] + np.arange(length)
        s = u[rows]
        fwd, bwd = np.empty_like(s), np.zeros_like(s)
        fwd[:, 0] = s[:, 0]
        for t in range(1, length):
            fwd[:, t] = s[:, t] + _lse(fwd[:, t - 1, :, None] + trans, axis=1)
        for t in range(length - 2, -1, -1):
            bwd[:, t] = _lse(trans + (s[:, t + 1] + bwd[:, t + 1])[:, None, :], axis=2)
        lz = _lse(fwd[:, -1], axis=1)
        log_z += float(lz.sum())
        node[rows] = np.exp(fwd + bwd - lz[:, None, None])
        pair = fwd[:, :-1, :, None] + trans + (s[:, 1:] + bwd[:, 1:])[:, :, None, :]
        edge += np.exp(pair - lz[:, None, None, None]).sum(axis=(0, 1))
    inside = np.ones(len(problem.y) - 1, dtype=bool)
    inside[lasts[:-1]] = False  # no edge from a sequence's last token to the next one
    observed = np.zeros_like(trans)
    np.add.at(observed, (problem.y[:-1][inside], problem.y[1:][inside]), 1.0)
    onehot = np.eye(k)[problem.y]
    truth = float((u * onehot).sum() + (trans * observed).sum())
    diff = node - onehot
    grad = np.concatenate(
        [
            np.asarray(problem.x.T @ diff).T.ravel(),
            diff.sum(axis=0),
            diff[firsts].sum(axis=0),
            diff[lasts].sum(axis=0),
            (edge - observed).ravel(),
        ]
    )
    value = (log_z - truth) / problem.n + 0.5 * l2 * float(w @ w)
    return value, grad / problem.n + l2 * w


def primal(problem: Problem, w: FloatArray, l2: float) -> float:
    """The objective alone (see :func:`primal_and_gradient`)."""
    return primal_and_gradient(problem, w, l2)[0]


def certified_lower_bound(problem: Problem, w: FloatArray, l2: float) -> tuple[float, float]:
    """``P(w)`` and ``P(w) - ||grad P(w)||^2 / (2 l2) <= P*`` (``P`` is l2-strongly convex)."""
    value, grad = primal_and_gradient(problem, w, l2)
    return value, value - float(grad @ grad) / (2 * l2)


def model_weights(model: dict[str, Any]) -> FloatArray:
    """A ``crf_fit`` model's weights in :func:`primal`'s layout."""
    parts = [model["emission"], model["bias"], model["start"], model["end"], model["transition"]]
    return np.concatenate([np.ravel(np.asarray(p, dtype=np.float64)) for p in parts])


# --------------------------------------------------------------------------------------
# CRFsuite
# --------------------------------------------------------------------------------------


def crfsuite_items(problem: Problem) -> list[list[dict[str, float]]]:
    """The problem's attributes as python-crfsuite items, plus the bias / start / end ones."""
    if problem.features == "pixels":
        rows = [{f"p{j}": 1.0 for j in np.flatnonzero(r)} for r in problem.x]
        bounds = np.concatenate([[0], np.cumsum(problem.lengths)]).tolist()
        items = [rows[a:b] for a, b in itertools.pairwise(bounds)]
    else:
        vocab = {attr: i for i, attr in enumerate(problem.attributes)}
        items = attribute_dicts(
            problem.frame, features=problem.features, sequence=problem.sequence, vocabulary=vocab
        )
    for seq in items:
        for item in seq:
            item[BIAS] = 1.0
        seq[0][START] = 1.0
        seq[-1][END] = 1.0
    return items


@dataclass
class CrfsuiteRun:
    """One python-crfsuite training run with per-iteration times and its final weights."""

    algorithm: str
    losses: list[float]  # CRFsuite's logged objective per iteration (sum scale)
    wall: list[float]  # wall seconds from the start of train() to the end of each iteration
    cpu: list[float]  # process CPU seconds, same points
    total_wall: float
    total_cpu: float
    weights: FloatArray  # final weights, our layout
    n_features: int
    tagger: Any  # a pycrfsuite.Tagger on the trained model


def train_crfsuite(
    problem: Problem, items: list[list[dict[str, float]]], algorithm: str, params: dict[str, Any]
) -> CrfsuiteRun:
    """Train with python-crfsuite (``lbfgs`` or ``l2sgd``); full states and transitions."""
    import pycrfsuite

    marks: list[tuple[float, float]] = []

    class Timed(pycrfsuite.Trainer):  # type: ignore[misc]
        """Marks the end of every iteration (pycrfsuite's callbacks only run when verbose)."""

        def message(self, message: str) -> None:
            if self.logparser.feed(message) == "iteration":
                marks.append((time.perf_counter(), time.process_time()))

    trainer = Timed(algorithm=algorithm, verbose=False)
    trainer.set_params(
        {
            "feature.minfreq": 0,
            "feature.possible_states": True,
            "feature.possible_transitions": True,
            **params,
        }
    )
    tags = problem.frame[problem.tag].to_list()
    bounds = np.concatenate([[0], np.cumsum(problem.lengths)]).tolist()
    for seq, a, b in zip(items, bounds[:-1], bounds[1:], strict=True):
        trainer.append(seq, tags[a:b])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.crfsuite")
        w0, c0 = time.perf_counter(), time.process_time()
        trainer.train(path)
        w1, c1 = time.perf_counter(), time.process_time()
        tagger = pycrfsuite.Tagger()
        tagger.open(path)  # the model is read into memory: the file may go
        weights = crfsuite_weights(problem, tagger.info())
    n_features = trainer.logparser.featgen_num_features or 0
    return CrfsuiteRun(
        algorithm=algorithm,
        losses=[it["loss"] for it in trainer.logparser.iterations],
        wall=[m[0] - w0 for m in marks],
        cpu=[m[1] - c0 for m in marks],
        total_wall=w1 - w0,
        total_cpu=c1 - c0,
        weights=weights,
        n_features=int(n_features),
        tagger=tagger,
    )


def crfsuite_weights(problem: Problem, info: Any) -> FloatArray:
    """CRFsuite's weights in :func:`primal`'s layout (features it dropped as zero are 0)."""
    k, a = len(problem.labels), len(problem.attributes)
    row = {label: i for i, label in enumerate(problem.labels)}
    column = {attr: i for i, attr in enumerate(problem.attributes)}
    emission, extra, trans = np.zeros((k, a)), np.zeros((3, k)), np.zeros((k, k))
    slots = {BIAS: 0, START: 1, END: 2}
    for (attr, label), weight in info.state_features.items():
        if attr in slots:
            extra[slots[attr], row[label]] = weight
        else:
            emission[row[label], column[attr]] = weight
    for (src, dst), weight in info.transitions.items():
        trans[row[src], row[dst]] = weight
    return np.concatenate([emission.ravel(), extra.ravel(), trans.ravel()])


# --------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------


def write_section(name: str, body: str) -> Path:
    """Replace (or append) the section ``name`` of ``results_crf.md`` with ``body``."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    title = "# CRF benchmarks\n\nWritten by `benchmarks/crf_sampling.py` and `benchmarks/crf_peers.py`.\n"
    text = RESULTS.read_text() if RESULTS.exists() else title
    block = f"{start}\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else f"{text.rstrip()}\n\n{block}\n"
    RESULTS.write_text(text if text.endswith("\n") else text + "\n")
    return RESULTS


def machine_line(info: dict[str, Any], load_end: tuple[float, ...] | None) -> str:
    """One line describing the machine, versions and load of a run (``common.machine_info``)."""
    import importlib.metadata

    load = ", ".join(f"{v:.2f}" for v in info.get("load_average") or [])
    end = ", ".join(f"{v:.2f}" for v in load_end or [])
    return (
        f"Machine: {info['cpu']}, {info['logical_cpus']} logical cores, {info['mem_gib']:.1f} GiB; "
        f"Python {info['python']}, polars {info['polars']}, polars-sdca {info['polars_sdca']} "
        f"(plugin built {info['plugin_built']}, commit {info['git_commit']}), python-crfsuite "
        f"{importlib.metadata.version('python-crfsuite')}, numpy {info['numpy']}. Load average "
        f"(1, 5, 15 min) at start {load}, at end {end} (a shared machine: compare CPU seconds); "
        f"seed {info['seed']}; run {info['date']}."
    )
