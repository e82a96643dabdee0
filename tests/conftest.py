"""Shared fixtures: real data sets (from `polars_sdca.datasets`) and hypothesis profiles."""

from __future__ import annotations

import os

import numpy as np
import polars as pl
import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=60, deadline=None)
settings.register_profile("dev", max_examples=20, deadline=None)
settings.register_profile("long", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("SDCA_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def breast_cancer() -> pl.DataFrame:
    from polars_sdca import datasets

    return datasets.load_breast_cancer(standardize=True)


@pytest.fixture(scope="session")
def conll_tokens() -> tuple[pl.DataFrame, int]:
    """The first 20,000 CoNLL-2003 training tokens with sparse CRF-style attributes.

    The label ``is_entity`` (+1 inside a named entity) makes a real sparse binary problem;
    regression losses use it as a +-1 target.
    """
    from polars_sdca import datasets

    tokens = datasets.load_conll2003("train").head(20_000)
    frame, vocab = datasets.conll_token_features(tokens)
    return frame.select("sentence", "features", "is_entity"), len(vocab)


def dense_xy(df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    cols = [c for c in df.columns if c.startswith("f")]
    return df.select(cols).to_numpy(), df["y"].to_numpy().astype(float)
