"""Sequence labelling around the ``crf_*`` expressions: features, scores and a tagger.

* :func:`token_features` builds CRFsuite-style token attributes (word identity, lowercase,
  prefixes / suffixes, shape, other token columns, and the same at neighbouring offsets) with
  Polars expressions, and dictionary-encodes them into the sparse feature column that
  :func:`polars_sdca.crf_fit` reads; the vocabulary it returns encodes new data the same way.
* :func:`entity_scores` computes entity-level precision, recall and F1 with the chunk rules of
  the CoNLL ``conlleval`` script, in one Polars query.
* :class:`CRFTagger` has the interface of ``sklearn_crfsuite.CRF`` (lists of attribute dicts
  in, lists of tags out), so code written for sklearn-crfsuite switches by changing the import.

Objective and CRFsuite's scaling
    :func:`polars_sdca.crf_fit` minimises, over ``n`` sequences,
    ``P(w) = (1/n) sum_i -log p(y_i | x_i; w) + (l2/2) ||w||^2``. CRFsuite's L-BFGS and
    L2SGD trainers minimise ``f(w) = sum_i -log p(y_i | x_i; w) + c2 ||w||^2`` (the sum over
    training sequences plus ``c2`` times the squared norm, without a 1/2:
    ``lbfgs_evaluate`` in CRFsuite's ``lib/crf/src/train_lbfgs.c`` adds ``c2 * norm`` to the
    value and ``2 * c2 * w`` to the gradient). So ``f = n P`` exactly when
    ``c2 = l2 n / 2``; :class:`CRFTagger` maps ``c2`` to ``l2 = 2 c2 / n``.

Parametrisation
    The model has, per label, one weight for every attribute (CRFsuite's
    ``feature.possible_states=True``), a full label-to-label transition matrix
    (``feature.possible_transitions=True``) and three per-label biases: on every token, on the
    first and on the last token of a sequence. CRFsuite has no such biases; giving it three
    extra attributes (one on every token, one on the first, one on the last) makes the two
    models the same function with the same L2 penalty.
"""

from __future__ import annotations

import inspect
import itertools
import numbers
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl

from polars_sdca.functions import crf_fit, crf_predict

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["CRFTagger", "attribute_dicts", "entity_scores", "token_features"]

_FEATURES_DTYPE = pl.List(pl.Struct({"index": pl.UInt32, "value": pl.Float64}))
# Internal column names of the tagger's frames; users never see them.
_SEQ, _TAG, _FEATURES = "__seq", "__tag", "__features"


# --------------------------------------------------------------------------------------
# Token attributes
# --------------------------------------------------------------------------------------


def _shape(word: pl.Expr) -> pl.Expr:
    """Collapsed word shape: runs of upper case -> X, lower case -> x, digits -> d."""
    return (
        word.str.replace_all(r"\p{Lu}", "X")
        .str.replace_all(r"\p{Ll}", "x")
        .str.replace_all(r"\p{Nd}", "d")
        .str.replace_all("X+", "X")
        .str.replace_all("x+", "x")
        .str.replace_all("d+", "d")
    )


def _token_slots(token: str, extra: Sequence[str], affixes: Sequence[int]) -> dict[str, pl.Expr]:
    """The value (a String expression) of each attribute kind of a token, by attribute name."""
    word = pl.col(token).cast(pl.String)
    lower = word.str.to_lowercase()
    slots = {"w": word, "wl": lower}
    for k in affixes:
        slots[f"p{k}"] = lower.str.head(k)
        slots[f"s{k}"] = lower.str.tail(k)
    slots["shape"] = _shape(word)
    for col in extra:
        if col in slots:
            msg = f"extra column {col!r} clashes with the attribute name {col!r}; rename the column"
            raise ValueError(msg)
        slots[col] = pl.col(col).cast(pl.String)
    return slots


def _attribute_exprs(
    slots: dict[str, pl.Expr],
    context: Sequence[str],
    window: int,
    boundary: bool,
    bias: bool,
    sequence: str,
    order_by: str | None,
) -> list[pl.Expr]:
    """One String expression per attribute of a token (null where it does not apply)."""

    def attr(name: str, value: pl.Expr) -> pl.Expr:
        return pl.concat_str(pl.lit(f"{name}="), value)

    def neighbour(expr: pl.Expr, offset: int) -> pl.Expr:
        return expr.shift(-offset).over(sequence, order_by=order_by)

    exprs = [attr(name, value) for name, value in slots.items()]
    offsets = [o for o in range(-window, window + 1) if o != 0]
    exprs += [attr(f"{name}[{o:+d}]", neighbour(slots[name], o)) for o in offsets for name in context]
    if boundary:
        index = pl.int_range(pl.len())
        exprs.append(pl.when(neighbour(index, -1).is_null()).then(pl.lit("BOS")))
        exprs.append(pl.when(neighbour(index, 1).is_null()).then(pl.lit("EOS")))
    if bias:
        exprs.append(pl.lit("bias"))
    return [e.alias(f"_a{k}") for k, e in enumerate(exprs)]


def _vocabulary_frame(vocabulary: dict[str, int]) -> pl.DataFrame:
    values = list(vocabulary.values())
    if any(not isinstance(v, int) or v < 0 or v >= 2**32 for v in values):
        msg = "vocabulary values must be integers in [0, 2**32); fix the mapping"
        raise ValueError(msg)
    if len(set(values)) != len(values):
        msg = "vocabulary maps two attributes to the same index; indices must be unique"
        raise ValueError(msg)
    return pl.DataFrame(
        {"_attr": list(vocabulary), "index": values},
        schema={"_attr": pl.String, "index": pl.UInt32},
    )


def _encode(
    base: pl.LazyFrame,
    long: pl.LazyFrame,
    vocabulary: dict[str, int] | None,
    min_count: int,
    value: pl.Expr,
    name: str,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Dictionary-encode ``(_row, _attr)`` pairs into one sparse list per row of ``base``.

    A new vocabulary numbers the attributes seen on at least ``min_count`` rows in sorted
    (code point) order, so it does not depend on the row order. ``value`` is evaluated on the
    known pairs (so ``pl.len().over("_row")`` counts a row's known attributes).
    """
    if vocabulary is None:
        vocab_frame = (
            long.group_by("_attr")
            .len()
            .filter(pl.col("len") >= min_count)
            .sort("_attr")
            .select("_attr", index=pl.int_range(pl.len(), dtype=pl.UInt32))
            .collect()
        )
        vocabulary = dict(zip(vocab_frame["_attr"].to_list(), vocab_frame["index"].to_list(), strict=True))
    else:
        vocab_frame = _vocabulary_frame(vocabulary)
    per_row = (
        long.join(vocab_frame.lazy(), on="_attr", how="inner")
        .with_columns(value=value)
        .group_by("_row")
        .agg(pl.struct("index", "value").sort_by("index").alias(name))
    )
    out = (
        base.join(per_row, on="_row", how="left", maintain_order="left")
        .with_columns(pl.col(name).fill_null(pl.lit([], dtype=_FEATURES_DTYPE)))
        .drop("_row")
        .collect()
    )
    return out, vocabulary


def token_features(
    df: pl.DataFrame | pl.LazyFrame,
    *,
    token: str,
    sequence: str,
    order_by: str | None = None,
    extra: Sequence[str] = (),
    window: int = 2,
    context: Sequence[str] | None = None,
    affixes: Sequence[int] = (3,),
    boundary: bool = True,
    bias: bool = False,
    vocabulary: dict[str, int] | None = None,
    min_count: int = 1,
    normalize: bool = False,
    name: str = "features",
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Build CRFsuite-style token attributes and encode them as a sparse feature column.

    Every token (row) gets binary attributes written ``name=value``, in the style of the
    CRFsuite tutorial's chunking and NER templates, all built with Polars expressions
    (neighbours through ``shift(k).over(sequence)``):

    * ``w`` the token, ``wl`` its lowercase form, ``p<k>`` / ``s<k>`` the first / last ``k``
      characters of ``wl`` for each ``k`` in ``affixes``, ``shape`` its collapsed shape
      (``Xx``, ``d-d``, ``X.X.``);
    * ``<col>`` for each column in ``extra`` (for example part-of-speech or chunk tags);
    * ``<name>[<offset>]`` for each attribute in ``context`` at offsets ``-window`` ..
      ``window`` (``wl[-1]``, ``pos[+2]``), absent beyond the ends of the sequence;
    * ``BOS`` on the first and ``EOS`` on the last token of each sequence when
      ``boundary=True``, and ``bias`` on every token when ``bias=True``. A CRF model has its
      own per-label start, end and bias weights, which these attributes duplicate (harmless,
      but only linear models need them).

    The attribute strings are dictionary-encoded into indices (the vocabulary); attributes
    missing from a given vocabulary are dropped, so a model fitted on the training split
    reads new data encoded with the training vocabulary.

    Parameters
    ----------
    df
        One token per row.
    token
        The token (word) column; cast to String. A null token has no word attributes.
    sequence
        The column whose equal values form a sequence (sentence).
    order_by
        Column giving the token order within a sequence; default: the row order.
    extra
        Other token columns used as attributes (cast to String; nulls give no attribute).
    window
        Largest neighbour offset (``>= 0``; 0 turns neighbour attributes off).
    context
        Attribute names repeated at the neighbour offsets, among ``w``, ``wl``, ``shape``,
        ``p<k>``, ``s<k>`` and the ``extra`` columns; default ``["wl", *extra]``.
    affixes
        Prefix and suffix lengths (positive integers).
    boundary
        Add the ``BOS`` / ``EOS`` attributes.
    bias
        Add the ``bias`` attribute to every token.
    vocabulary
        Attribute-to-index mapping to reuse (the one returned for the training data). When
        ``None``, it is built from ``df``: every attribute seen on at least ``min_count``
        tokens, numbered 0, 1, ... in sorted (code point) order, so it is deterministic.
    min_count
        Minimum number of tokens for an attribute to enter a new vocabulary.
    normalize
        Give every stored value ``1 / sqrt(nnz)`` (unit-norm rows, for linear models); with
        ``False`` (the CRF convention) every value is ``1.0``.
    name
        Name of the feature column.

    Returns
    -------
    tuple[pl.DataFrame, dict[str, int]]
        The input rows in their order with the column ``name`` appended (replaced if it
        exists) of dtype ``List(Struct{index: UInt32, value: Float64})``, indices strictly
        increasing within a row (a row whose attributes are all unknown gets an empty list);
        and the vocabulary (the given object when one was passed), whose length is the
        number of attributes ``n_features``.

    Raises
    ------
    ValueError
        A column is missing, an option is out of range, an ``extra`` column is named like a
        word attribute, or the given vocabulary has indices outside ``[0, 2**32)`` or
        repeated.

    Examples
    --------
    >>> import polars as pl
    >>> from polars_sdca.crf import token_features
    >>> tokens = pl.DataFrame(
    ...     {"sent": [0, 0, 1], "word": ["Peter", "runs", "Hi"], "pos": ["NNP", "VBZ", "UH"]}
    ... )
    >>> out, vocab = token_features(tokens, token="word", sequence="sent", extra=["pos"], window=1)
    >>> names = {i: a for a, i in vocab.items()}
    >>> [names[f["index"]] for f in out["features"][0]]  # doctest: +NORMALIZE_WHITESPACE
    ['BOS', 'p3=pet', 'pos=NNP', 'pos[+1]=VBZ', 's3=ter', 'shape=Xx', 'w=Peter', 'wl=peter',
     'wl[+1]=runs']
    >>> new = pl.DataFrame({"sent": [5], "word": ["Peter"], "pos": ["NN"]})
    >>> again, _ = token_features(new, token="word", sequence="sent", extra=["pos"], vocabulary=vocab)
    >>> [names[f["index"]] for f in again["features"][0]]  # "pos=NN" is unknown: dropped
    ['BOS', 'EOS', 'p3=pet', 's3=ter', 'shape=Xx', 'w=Peter', 'wl=peter']
    """
    # Collect a lazy input once: it is read twice below (attributes, then the output).
    lf = (df.collect() if isinstance(df, pl.LazyFrame) else df).lazy()
    columns = lf.collect_schema().names()
    needed = [token, sequence, *([order_by] if order_by is not None else []), *extra]
    missing = [c for c in needed if c not in columns]
    if missing:
        msg = f"token_features: missing column(s) {missing}; the frame has {columns}"
        raise ValueError(msg)
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        msg = f"window must be an integer >= 0, got {window!r}"
        raise ValueError(msg)
    if any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in affixes):
        msg = f"affixes must be positive integers, got {list(affixes)!r}"
        raise ValueError(msg)
    if min_count < 1:
        msg = f"min_count must be >= 1, got {min_count}"
        raise ValueError(msg)
    slots = _token_slots(token, extra, affixes)
    context = ["wl", *extra] if context is None else list(context)
    unknown = [c for c in context if c not in slots]
    if unknown:
        msg = f"unknown context attribute(s) {unknown}; choose among {list(slots)}"
        raise ValueError(msg)

    base = lf.drop([name] if name in columns else []).with_row_index("_row")
    # One (row, attribute) pair per active attribute; wide-to-long with unpivot is much faster
    # than building a List column with concat_list.
    long = (
        base.select("_row", *_attribute_exprs(slots, context, window, boundary, bias, sequence, order_by))
        .unpivot(index="_row", value_name="_attr")
        .select("_row", "_attr")
        .drop_nulls("_attr")
        .collect()
        .lazy()
    )
    nnz = pl.len().over("_row").cast(pl.Float64)
    value = (1.0 / nnz.sqrt()) if normalize else pl.lit(1.0, dtype=pl.Float64)
    return _encode(base, long, vocabulary, min_count, value, name)


def attribute_dicts(
    df: pl.DataFrame,
    *,
    features: str,
    sequence: str,
    vocabulary: Mapping[str, int],
) -> list[list[dict[str, float]]]:
    """The sparse feature column as python-crfsuite input: one list of dicts per sequence.

    The inverse of the encoding of :func:`token_features`, for handing the same attributes to
    CRFsuite (``pycrfsuite.Trainer.append``, ``sklearn_crfsuite.CRF.fit``) or to
    :class:`CRFTagger`: each token becomes ``{attribute name: value}``.

    Parameters
    ----------
    df
        One token per row, the rows of each sequence contiguous and in order.
    features
        The sparse feature column (``List(Struct{index, value})``).
    sequence
        The column whose consecutive equal values form a sequence.
    vocabulary
        The attribute-to-index mapping the column was encoded with.

    Returns
    -------
    list[list[dict[str, float]]]
        One list per sequence, in order of first appearance, of one dict per token.

    Raises
    ------
    ValueError
        An index is not in the vocabulary.

    Examples
    --------
    >>> import polars as pl
    >>> from polars_sdca.crf import attribute_dicts, token_features
    >>> tokens = pl.DataFrame({"s": [0, 0, 1], "word": ["Hi", "there", "Bye"]})
    >>> out, vocab = token_features(tokens, token="word", sequence="s", window=0, affixes=[])
    >>> attribute_dicts(out, features="features", sequence="s", vocabulary=vocab)[1]
    [{'BOS': 1.0, 'EOS': 1.0, 'shape=Xx': 1.0, 'w=Bye': 1.0, 'wl=bye': 1.0}]
    """
    names = {index: name for name, index in vocabulary.items()}
    runs = df.select(pl.col(sequence).rle_id().alias("_run"), pl.col(features))
    out: list[list[dict[str, float]]] = []
    last = -1
    for run, entries in runs.iter_rows():
        if run != last:
            out.append([])
            last = run
        try:
            out[-1].append({names[e["index"]]: e["value"] for e in entries})
        except KeyError as exc:
            msg = (
                f"column {features!r} holds index {exc.args[0]}, which is not in the vocabulary; "
                "pass the vocabulary the column was built with"
            )
            raise ValueError(msg) from None
    return out


# --------------------------------------------------------------------------------------
# Entity-level scores
# --------------------------------------------------------------------------------------


def _entities(lf: pl.LazyFrame, tag: str, sequence: str, order_by: str | None) -> pl.LazyFrame:
    """Per token: ``_seq``, the entity type ``_type`` (null outside), ``_pos`` and ``_entity``.

    conlleval's chunk rules, which read both IOB1 and IOB2: an entity starts at ``B-X``, or at
    ``I-X`` when the previous token is not of type ``X`` (or at the start of the sequence).
    Two steps, because Polars 1.x does not nest window expressions.
    """
    parts = pl.col(tag).cast(pl.String).str.split_exact("-", 1)
    kind = pl.col("_type")
    starts = kind.is_not_null() & ((pl.col("_prefix") == "B") | (pl.col("_prev") != kind).fill_null(True))
    return (
        lf.select(
            pl.col(sequence).alias("_seq"),
            *([pl.col(order_by)] if order_by is not None else []),
            parts.struct.field("field_0").alias("_prefix"),
            parts.struct.field("field_1").alias("_type"),
        )
        .with_columns(
            pl.col("_type").shift(1).over("_seq", order_by=order_by).alias("_prev"),
            pl.int_range(pl.len()).over("_seq", order_by=order_by).alias("_pos"),
        )
        .select(
            "_seq",
            "_type",
            "_pos",
            starts.cast(pl.UInt32).cum_sum().over("_seq", order_by=order_by).alias("_entity"),
        )
    )


def entity_scores(
    df: pl.DataFrame | pl.LazyFrame,
    *,
    truth: str,
    prediction: str,
    sequence: str,
    order_by: str | None = None,
) -> pl.DataFrame:
    """Entity-level precision, recall and F1 of predicted IOB tags (CoNLL ``conlleval``).

    An entity is a maximal run of tokens of one type (``B-X`` starts one; ``I-X`` continues
    the previous token's entity of type ``X`` and starts a new one otherwise, so IOB1 and IOB2
    tags both work). A predicted entity counts as correct when the true tags have an entity
    with the same type, start and end.

    Parameters
    ----------
    df
        One token per row.
    truth, prediction
        The true and predicted tag columns (``O``, ``B-X``, ``I-X``).
    sequence
        The column whose equal values form a sequence.
    order_by
        Column giving the token order within a sequence; default: the row order.

    Returns
    -------
    pl.DataFrame
        One row per entity type (sorted) and a last row ``overall``: ``type``, ``n_true``,
        ``n_pred``, ``n_correct`` (UInt32), ``precision``, ``recall`` and ``f1`` (Float64, in
        [0, 1]; 0 when undefined).

    Examples
    --------
    >>> import polars as pl
    >>> from polars_sdca.crf import entity_scores
    >>> df = pl.DataFrame(
    ...     {
    ...         "s": [0, 0, 0, 1, 1],
    ...         "true": ["B-PER", "I-PER", "O", "B-LOC", "O"],
    ...         "pred": ["B-PER", "I-PER", "O", "B-PER", "O"],
    ...     }
    ... )
    >>> scores = entity_scores(df, truth="true", prediction="pred", sequence="s")
    >>> scores.select("type", "n_true", "n_pred", "n_correct", pl.col("f1").round(3)).rows()
    [('LOC', 1, 0, 0, 0.0), ('PER', 1, 2, 1, 0.667), ('overall', 2, 2, 1, 0.5)]
    """
    lf = df.lazy()

    def spans(tag: str) -> pl.LazyFrame:
        return (
            _entities(lf, tag, sequence, order_by)
            .filter(pl.col("_type").is_not_null())
            .group_by("_seq", "_entity")
            .agg(pl.col("_type").first(), start=pl.col("_pos").min(), end=pl.col("_pos").max())
            .drop("_entity")
        )

    true, pred = spans(truth), spans(prediction)
    keys = ["_seq", "_type", "start", "end"]
    counts = [
        true.group_by("_type").agg(n_true=pl.len()),
        pred.group_by("_type").agg(n_pred=pl.len()),
        true.join(pred, on=keys, how="inner").group_by("_type").agg(n_correct=pl.len()),
    ]
    per_type = (
        counts[0]
        .join(counts[1], on="_type", how="full", coalesce=True)
        .join(counts[2], on="_type", how="full", coalesce=True)
        .with_columns(pl.col("n_true", "n_pred", "n_correct").fill_null(0).cast(pl.UInt32))
        .sort("_type")
        .collect()
    )
    overall = per_type.select(pl.lit("overall").alias("_type"), pl.col("n_true", "n_pred", "n_correct").sum())
    return (
        pl.concat([per_type, overall])
        .rename({"_type": "type"})
        .with_columns(
            precision=_ratio(pl.col("n_correct"), pl.col("n_pred")),
            recall=_ratio(pl.col("n_correct"), pl.col("n_true")),
        )
        .with_columns(f1=_ratio(2 * pl.col("n_correct"), pl.col("n_true") + pl.col("n_pred")))
    )


def _ratio(num: pl.Expr, den: pl.Expr) -> pl.Expr:
    return pl.when(den > 0).then(num.cast(pl.Float64) / den).otherwise(0.0)


# --------------------------------------------------------------------------------------
# sklearn-crfsuite compatible tagger
# --------------------------------------------------------------------------------------

_SAME_OBJECTIVE = ("lbfgs", "l2sgd", "sdca")
"""CRFsuite algorithms that minimise the L2-regularized likelihood (so SDCA solves their
problem); ``ap``, ``pa`` and ``arow`` optimise other objectives."""


def _item_attributes(item: Any, prefix: str, out: dict[str, float]) -> dict[str, float]:
    """Attribute names and values of one item, with python-crfsuite's ``ItemSequence`` rules.

    ``{"k": "v"}`` gives ``"k:v"`` with value 1; ``{"k": 0.5}`` gives ``"k"`` with value 0.5
    (booleans count as 0 / 1); a nested dict prefixes its keys with ``"k:"``; a list or set of
    strings (top level or as a value) gives each string (prefixed) with value 1.
    """
    if isinstance(item, Mapping):
        for key, value in item.items():
            name = f"{prefix}{key}"
            if isinstance(value, str):
                out[f"{name}:{value}"] = 1.0
            elif isinstance(value, numbers.Real):
                out[name] = float(value)
            elif isinstance(value, (Mapping, Iterable)):
                _item_attributes(value, f"{name}:", out)
            else:
                msg = (
                    f"attribute {name!r} has a value of type {type(value).__name__}; use str, number or dict"
                )
                raise TypeError(msg)
    elif isinstance(item, Iterable) and not isinstance(item, (str, bytes)):
        for value in item:
            if not isinstance(value, str):
                msg = f"a list of attributes must hold strings, got {type(value).__name__} {value!r}"
                raise TypeError(msg)
            out[f"{prefix}{value}"] = 1.0
    else:
        msg = f"an item must be a dict of attributes or a list of strings, got {type(item).__name__}"
        raise TypeError(msg)
    return out


def _sequences_frame(
    X: Sequence[Sequence[Any]],
    vocabulary: dict[str, int] | None,
    min_freq: float,
) -> tuple[pl.DataFrame, dict[str, int], npt.NDArray[np.int64]]:
    """Tokens of ``X`` as a frame (sequence id, sparse features) plus the sequence lengths."""
    rows: list[int] = []
    names: list[str] = []
    values: list[float] = []
    lengths = np.zeros(len(X), dtype=np.int64)
    token = 0
    for i, xseq in enumerate(X):
        first = token
        for item in xseq:
            attrs = _item_attributes(item, "", {})
            rows.extend([token] * len(attrs))
            names.extend(attrs)
            values.extend(attrs.values())
            token += 1
        lengths[i] = token - first
    base = pl.DataFrame({_SEQ: np.repeat(np.arange(len(X), dtype=np.uint32), lengths)}).with_row_index("_row")
    long = pl.DataFrame(
        {"_row": rows, "_attr": names, "value": values},
        schema={"_row": pl.UInt32, "_attr": pl.String, "value": pl.Float64},
    )
    # CRFsuite drops what occurs no more than `min_freq` times; counts are whole numbers.
    min_count = int(np.floor(min_freq)) + 1 if min_freq >= 0 else 1
    frame, vocabulary = _encode(base.lazy(), long.lazy(), vocabulary, min_count, pl.col("value"), _FEATURES)
    return frame, vocabulary, lengths


class CRFTagger:
    """A linear-chain CRF with the interface of ``sklearn_crfsuite.CRF``, trained by SDCA.

    Existing sklearn-crfsuite code switches by changing one import::

        from polars_sdca.crf import CRFTagger as CRF   # was: from sklearn_crfsuite import CRF

    ``X`` is a list of sequences, each a list of items (one per token); an item is a dict of
    attributes in python-crfsuite's format (``{"word.lower()": "the", "bias": 1.0}``: a string
    value ``v`` of key ``k`` is the binary attribute ``"k:v"``, a number is the value of the
    attribute ``k``, nested dicts and lists of strings are flattened the same way) or a list
    of attribute names. ``y`` is a list of label lists. The fit is one
    :func:`polars_sdca.crf_fit` query; the model always has one weight per (attribute,
    label) and per label pair (CRFsuite's ``all_possible_states`` and
    ``all_possible_transitions``) plus per-label bias, start and end weights.

    Parameters
    ----------
    algorithm : {"lbfgs", "l2sgd", "sdca"}
        CRFsuite's L2-regularized likelihood trainers; both name the problem that SDCA
        solves here. ``"ap"``, ``"pa"`` and ``"arow"`` (other objectives) raise at fit.
    min_freq : float
        Attributes seen on no more than ``min_freq`` tokens of the training data are dropped.
    all_possible_states, all_possible_transitions : bool, optional
        Accepted for compatibility; the model is always full (see above).
    c1 : float
        L1 strength; not supported: a value ``> 0`` is ignored with a ``UserWarning``.
    c2 : float
        L2 strength in CRFsuite's scaling, ``> 0`` (default 1.0): the objective
        ``sum_i -log p(y_i | x_i) + c2 ||w||^2`` is ``n`` times the plugin's with
        ``l2 = 2 c2 / n`` for ``n`` training sequences.
    max_iterations : int, optional
        Maximum number of epochs (passes over the sequences); default 100.
    num_memories, epsilon, period, delta, linesearch, max_linesearch, calibration_eta, \
calibration_rate, calibration_samples, calibration_candidates, calibration_max_trials, \
pa_type, c, error_sensitive, averaging, variance, gamma, verbose, model_filename, \
keep_tempfiles, trainer_cls
        Accepted for compatibility; they tune CRFsuite's own trainers and have no effect.
    tol : float
        Stop when the duality gap ``<= tol * primal`` (default 1e-6).
    sampling : {"gap", "uniform"}
        How SDCA picks the next sequence (default ``"gap"``).
    non_uniform : float
        Fraction of gap-proportional draws under ``"gap"`` sampling (default 0.8).
    seed : int
        Random seed; the same seed gives the same model.
    max_seconds : float, optional
        Time budget of the fit.
    n_threads : int, optional
        Threads of the fit (default: every core; see :func:`polars_sdca.crf_fit`). The same
        seed and thread count give the same model.

    Attributes
    ----------
    classes_ : list
        The labels (sorted).
    attributes_ : list of str
        The known attributes, in index order.
    num_attributes_ : int
        Number of known attributes.
    state_features_ : dict
        ``{(attribute, label): weight}`` for the non-zero emission weights.
    transition_features_ : dict
        ``{(label_from, label_to): weight}``.
    bias_features_ : dict
        ``{(kind, label): weight}`` with ``kind`` in ``"bias"``, ``"start"``, ``"end"``.
    model_ : dict
        The fitted model struct (:func:`polars_sdca.crf_fit`): weights, ``primal``, ``gap``,
        ``epochs``, ``converged``, ``gap_trace``, ...

    Examples
    --------
    >>> from polars_sdca.crf import CRFTagger
    >>> X = [[{"w": "Paris"}, {"w": "is"}, {"w": "big"}], [{"w": "Rome"}, {"w": "is"}]]
    >>> y = [["B-LOC", "O", "O"], ["B-LOC", "O"]]
    >>> crf = CRFTagger(c2=0.01).fit(X, y)
    >>> crf.classes_
    ['B-LOC', 'O']
    >>> crf.predict_single([{"w": "Rome"}, {"w": "is"}, {"w": "big"}])
    ['B-LOC', 'O', 'O']
    >>> crf.score(X, y)
    1.0
    >>> round(crf.transition_features_[("B-LOC", "O")], 3) > 0
    True
    """

    def __init__(
        self,
        algorithm: str = "lbfgs",
        min_freq: float = 0,
        all_possible_states: bool | None = None,
        all_possible_transitions: bool | None = None,
        c1: float = 0,
        c2: float = 1.0,
        max_iterations: int | None = None,
        num_memories: int | None = None,
        epsilon: float | None = None,
        period: int | None = None,
        delta: float | None = None,
        linesearch: str | None = None,
        max_linesearch: int | None = None,
        calibration_eta: float | None = None,
        calibration_rate: float | None = None,
        calibration_samples: int | None = None,
        calibration_candidates: int | None = None,
        calibration_max_trials: int | None = None,
        pa_type: int | None = None,
        c: float | None = None,
        error_sensitive: bool | None = None,
        averaging: bool | None = None,
        variance: float | None = None,
        gamma: float | None = None,
        verbose: bool = False,
        model_filename: str | None = None,
        keep_tempfiles: bool | None = None,
        trainer_cls: Any = None,
        tol: float = 1e-6,
        sampling: Literal["gap", "uniform"] = "gap",
        non_uniform: float = 0.8,
        seed: int = 0,
        max_seconds: float | None = None,
        n_threads: int | None = None,
    ) -> None:
        # Stored unchecked (the scikit-learn convention); `fit` and the plugin check them.
        self.algorithm = algorithm
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.linesearch = linesearch
        self.max_linesearch = max_linesearch
        self.calibration_eta = calibration_eta
        self.calibration_rate = calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.pa_type = pa_type
        self.c = c
        self.error_sensitive = error_sensitive
        self.averaging = averaging
        self.variance = variance
        self.gamma = gamma
        self.verbose = verbose
        self.model_filename = model_filename
        self.keep_tempfiles = keep_tempfiles
        self.trainer_cls = trainer_cls
        self.tol = tol
        self.sampling = sampling
        self.non_uniform = non_uniform
        self.seed = seed
        self.max_seconds = max_seconds
        self.n_threads = n_threads
        self._model: pl.DataFrame | None = None
        self._vocabulary: dict[str, int] = {}

    # -- scikit-learn parameter protocol ------------------------------------------------

    @classmethod
    def _param_names(cls) -> list[str]:
        return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters (scikit-learn's estimator protocol)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> CRFTagger:
        """Set constructor parameters; an unknown name raises ``ValueError``."""
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                msg = f"invalid parameter {name!r} for CRFTagger; valid parameters are {valid}"
                raise ValueError(msg)
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = inspect.signature(type(self).__init__).parameters
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if v != defaults[k].default]
        return f"CRFTagger({', '.join(changed)})"

    # -- fit and predict -----------------------------------------------------------------

    def fit(
        self,
        X: Iterable[Sequence[Any]],
        y: Iterable[Sequence[Any]],
        X_dev: Iterable[Sequence[Any]] | None = None,
        y_dev: Iterable[Sequence[Any]] | None = None,
    ) -> CRFTagger:
        """Train the CRF.

        Parameters
        ----------
        X
            Sequences of items (attribute dicts or lists of attribute names).
        y
            Sequences of labels (strings, integers or booleans), one per item.
        X_dev, y_dev
            Held-out data; accepted for compatibility (CRFsuite only logs scores on it).

        Returns
        -------
        CRFTagger
            ``self``.

        Raises
        ------
        ValueError
            Mismatched lengths, an unsupported ``algorithm``, ``c2 <= 0``, no tokens.
        TypeError
            An item or attribute value of an unsupported type.
        polars.exceptions.ComputeError
            The plugin refused the data (for example NaN attribute values).
        """
        if (X_dev is None) != (y_dev is None):
            msg = "pass both X_dev and y_dev to use held-out data"
            raise ValueError(msg)
        if self.algorithm not in _SAME_OBJECTIVE:
            msg = (
                f"algorithm {self.algorithm!r} optimises another objective; CRFTagger fits the "
                f"L2-regularized likelihood of {list(_SAME_OBJECTIVE)}"
            )
            raise ValueError(msg)
        if self.c1:
            warnings.warn(
                f"c1={self.c1} ignored: CRFTagger fits the L2-regularized likelihood only (c2)",
                UserWarning,
                stacklevel=2,
            )
        if isinstance(self.c2, bool) or not isinstance(self.c2, numbers.Real) or not self.c2 > 0:
            msg = f"c2 must be a number > 0 (the SDCA CRF needs L2 regularization), got {self.c2!r}"
            raise ValueError(msg)
        X, y = list(X), list(y)
        if len(X) != len(y):
            msg = f"X has {len(X)} sequences but y has {len(y)}"
            raise ValueError(msg)
        for i, (xseq, yseq) in enumerate(zip(X, y, strict=True)):
            if len(xseq) != len(yseq):
                msg = f"sequence {i}: {len(xseq)} items but {len(yseq)} labels"
                raise ValueError(msg)
        frame, vocabulary, lengths = _sequences_frame(X, None, float(self.min_freq))
        n = int((lengths > 0).sum())
        if n == 0:
            msg = "no training tokens: every sequence of X is empty"
            raise ValueError(msg)
        tags = pl.Series(_TAG, [label for yseq in y for label in yseq])
        self._model = frame.with_columns(tags).select(
            crf_fit(
                _TAG,
                _FEATURES,
                sequence=_SEQ,
                l2=2.0 * float(self.c2) / n,
                tol=self.tol,
                max_epochs=100 if self.max_iterations is None else self.max_iterations,
                sampling=self.sampling,
                non_uniform=self.non_uniform,
                seed=self.seed,
                max_seconds=self.max_seconds,
                n_threads=self.n_threads,
                n_features=len(vocabulary),
            ).alias("model")
        )
        self._vocabulary = vocabulary
        self.__dict__.pop("_weights", None)
        return self

    def _fitted(self) -> pl.DataFrame:
        if self._model is None:
            msg = "this CRFTagger is not fitted yet; call fit(X, y) first"
            raise ValueError(msg)
        return self._model

    def predict(self, X: Iterable[Sequence[Any]]) -> npt.NDArray[np.object_]:
        """Viterbi labels of each sequence.

        Parameters
        ----------
        X
            Sequences of items, as for :meth:`fit`. Unknown attributes are ignored.

        Returns
        -------
        numpy.ndarray
            ``dtype=object``, one list of labels per sequence (built like sklearn-crfsuite's:
            ``np.array(list_of_lists, dtype=object)``).
        """
        return np.array(self._predict_lists(list(X)), dtype=object)

    def predict_single(self, xseq: Sequence[Any]) -> list[Any]:
        """Viterbi labels of one sequence (a list of items)."""
        return self._predict_lists([xseq])[0]

    def _predict_lists(self, X: Sequence[Sequence[Any]]) -> list[list[Any]]:
        model = self._fitted()
        frame, _, lengths = _sequences_frame(X, self._vocabulary, 0)
        tags = frame.select(crf_predict(model, _FEATURES, sequence=_SEQ)).to_series().to_list()
        bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
        return [tags[a:b] for a, b in itertools.pairwise(bounds)]

    def predict_marginals(self, X: Iterable[Sequence[Any]]) -> npt.NDArray[np.object_]:
        """Per item, the marginal probability of every label.

        Returns
        -------
        numpy.ndarray
            ``dtype=object``, one list per sequence of ``{label: p(y_t = label | x)}`` dicts
            (sklearn-crfsuite's layout).
        """
        return np.array(self._marginal_lists(list(X)), dtype=object)

    def predict_marginals_single(self, xseq: Sequence[Any]) -> list[dict[Any, float]]:
        """Marginals of one sequence: one ``{label: probability}`` dict per item."""
        return self._marginal_lists([xseq])[0]

    def _marginal_lists(self, X: Sequence[Sequence[Any]]) -> list[list[dict[Any, float]]]:
        model = self._fitted()
        frame, _, lengths = _sequences_frame(X, self._vocabulary, 0)
        probs = frame.select(crf_predict(model, _FEATURES, sequence=_SEQ, kind="marginals")).to_series()
        labels = self._weights["labels"]
        rows = probs.to_list()
        bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
        return [[dict(zip(labels, p, strict=True)) for p in rows[a:b]] for a, b in itertools.pairwise(bounds)]

    def score(self, X: Iterable[Sequence[Any]], y: Iterable[Sequence[Any]]) -> float:
        """Accuracy over all items (sklearn-crfsuite's ``flat_accuracy_score``)."""
        pred = [label for seq in self._predict_lists(list(X)) for label in seq]
        true = [label for seq in y for label in seq]
        if len(pred) != len(true):
            msg = f"X has {len(pred)} items but y has {len(true)} labels"
            raise ValueError(msg)
        return float(np.mean([a == b for a, b in zip(pred, true, strict=True)])) if true else 0.0

    # -- fitted attributes ---------------------------------------------------------------

    @property
    def _weights(self) -> dict[str, Any]:
        """The model's weights as numpy arrays (cached until the next fit)."""
        if "_weights" not in self.__dict__:
            model = self._fitted()["model"].struct
            labels = model.field("labels").explode()
            k = labels.len()
            self.__dict__["_weights"] = {
                "labels": labels.to_list(),
                "emission": model.field("emission").explode().explode().to_numpy().reshape(k, -1),
                "transition": model.field("transition").explode().explode().to_numpy().reshape(k, k),
                **{f: model.field(f).explode().to_numpy() for f in ("bias", "start", "end")},
            }
        weights: dict[str, Any] = self.__dict__["_weights"]
        return weights

    @property
    def model_(self) -> dict[str, Any] | None:
        """The fitted model struct as a dict (``None`` before fit)."""
        return None if self._model is None else self._model["model"].item()

    @property
    def classes_(self) -> list[Any] | None:
        """The labels, in the order of the model's per-label weights."""
        return None if self._model is None else list(self._weights["labels"])

    @property
    def attributes_(self) -> list[str] | None:
        """The known attributes in index order."""
        if self._model is None:
            return None
        names = [""] * len(self._vocabulary)
        for name, index in self._vocabulary.items():
            names[index] = name
        return names

    @property
    def num_attributes_(self) -> int | None:
        """Number of known attributes."""
        return None if self._model is None else len(self._vocabulary)

    @property
    def state_features_(self) -> dict[tuple[str, Any], float] | None:
        """``{(attribute, label): weight}`` for every non-zero emission weight."""
        names = self.attributes_
        if names is None:
            return None
        emission, labels = self._weights["emission"], self._weights["labels"]
        ks, attrs = np.nonzero(emission)
        return {
            (names[a], labels[k]): w
            for k, a, w in zip(ks.tolist(), attrs.tolist(), emission[ks, attrs].tolist(), strict=True)
        }

    @property
    def transition_features_(self) -> dict[tuple[Any, Any], float] | None:
        """``{(label_from, label_to): weight}``."""
        if self._model is None:
            return None
        labels, transition = self._weights["labels"], self._weights["transition"]
        return {(a, b): float(transition[i, j]) for i, a in enumerate(labels) for j, b in enumerate(labels)}

    @property
    def bias_features_(self) -> dict[tuple[str, Any], float] | None:
        """``{(kind, label): weight}`` of the per-label biases: ``bias``, ``start``, ``end``."""
        if self._model is None:
            return None
        labels = self._weights["labels"]
        return {
            (kind, label): float(w)
            for kind in ("bias", "start", "end")
            for label, w in zip(labels, self._weights[kind], strict=True)
        }
