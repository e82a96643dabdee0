"""Per-group fits on real data: CoNLL-2003 tokens, one named-entity detector per POS tag.

A feature-store style job: the training tokens (203,621 rows, sparse CRFsuite-style attributes
built with Polars expressions) are grouped by part-of-speech tag and one logistic model is fitted
per group in a single lazy query. The models are joined back to the validation tokens and
scored with `predict`. A single global model on all rows shows the large-sparse case.

Run with `make demo` (downloads the data once into ~/.cache/polars-sdca).
"""

from __future__ import annotations

import time

import polars as pl

import polars_sdca as ps
from polars_sdca import datasets


def main() -> None:
    t0 = time.perf_counter()
    train_tokens = datasets.load_conll2003("train")
    valid_tokens = datasets.load_conll2003("valid")
    train, vocab = datasets.conll_token_features(train_tokens)
    valid, _ = datasets.conll_token_features(valid_tokens, vocabulary=vocab)
    n_features = len(vocab)
    print(
        f"data: {train.height:,} training tokens, {valid.height:,} validation tokens, "
        f"{n_features:,} sparse attributes ({time.perf_counter() - t0:.1f} s to load and featurize)"
    )

    fit_opts = {"loss": "logistic", "l2": 1e-4, "tol": 1e-6, "n_features": n_features}

    # One model per POS tag, fitted in parallel across groups by Polars; groups with a single
    # class come back as null models with a status instead of failing the job.
    t0 = time.perf_counter()
    models = (
        train.lazy()
        .group_by("pos")
        .agg(
            pl.len().alias("rows"),
            pl.col("is_entity").sdca.fit("features", on_error="null", **fit_opts).alias("model"),
        )
        .collect()
    )
    fit_seconds = time.perf_counter() - t0

    # Score the validation tokens of each POS with its own model. Each model is passed as a
    # literal (broadcast, not copied per row: the coefficient lists are 94k wide), and the
    # per-group queries run as one concatenated lazy plan.
    fitted_models = models.filter(pl.col("model").struct.field("coef").is_not_null())
    per_group = [
        valid.lazy()
        .filter(pl.col("pos") == row["pos"])
        .with_columns(pred=ps.predict(row["model"], "features", kind="class"))
        for row in fitted_models.iter_rows(named=True)
    ]
    scored = (
        pl.concat(per_group)
        .group_by("pos")
        .agg(
            pl.len().alias("valid_rows"),
            (pl.col("pred") == pl.col("is_entity")).mean().alias("valid_accuracy"),
        )
        .collect()
    )
    summary = (
        models.unnest("model")
        .join(scored, on="pos", how="left")
        .select("pos", "rows", "epochs", "gap", "converged", "valid_rows", "valid_accuracy", "status")
        .sort("rows", descending=True)
    )
    fitted = summary.filter(pl.col("epochs").is_not_null())
    print(f"\nper-POS models: {models.height} groups fitted in {fit_seconds:.2f} s")
    with pl.Config(tbl_rows=12, tbl_width_chars=140, fmt_str_lengths=40):
        print(summary.head(12))
    print(
        f"{fitted.height} fitted, {summary.height - fitted.height} null (one-class groups); "
        f"largest gap {fitted['gap'].max():.2e}"
    )

    # One global sparse model on every token.
    t0 = time.perf_counter()
    model = train.select(pl.col("is_entity").sdca.fit("features", **fit_opts).alias("m"))
    seconds = time.perf_counter() - t0
    m = model.item()
    acc = valid.select((ps.predict(model, "features", kind="class") == pl.col("is_entity")).mean()).item()
    print(
        f"\nglobal model: {m['n_rows']:,} rows x {m['n_features']:,} features in {seconds:.2f} s, "
        f"{m['epochs']} epochs, primal {m['primal']:.6f}, gap {m['gap']:.2e} "
        f"(converged={m['converged']}), validation accuracy {acc:.4f}"
    )


if __name__ == "__main__":
    main()
