"""The README's and the documentation site's Python examples run (STYLE.md: docs are executed).

A fence ```` ```python exec="on" ```` marks a runnable block: markdown-exec runs it while
``make docs`` builds the site, and this test runs it again in ``make test``, so a page whose
example breaks fails the suite even when nobody builds the site. Blocks with the same
``session="..."`` in one file share their variables and run in page order, as in the build;
each other block runs alone. Every case runs in an empty temporary directory (examples that save
files leave nothing behind). A block that names a downloaded data set (``data="conll2003"``)
is slow and runs only when that data set is in the loader cache, as in the build.

The reader of the fences is ``docs/hooks.py`` (the build's own hooks), so both see the same
blocks.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


hooks = _load_hooks()
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _cases() -> list[Any]:
    """One pytest case per session (or lone block) of every document."""
    cases = []
    for path in DOCUMENTS:
        sessions: dict[str, list[Any]] = {}
        for block in hooks.python_blocks(path.read_text()):
            if block.runs:
                key = block.attributes.get("session") or f"line {block.line}"
                sessions.setdefault(key, []).append(block)
        for key, blocks in sessions.items():
            name = f"{path.relative_to(ROOT)}::{key}"
            needs_data = any("data" in b.attributes for b in blocks)
            marks = [pytest.mark.slow] if needs_data else []
            cases.append(pytest.param(path, blocks, id=name, marks=marks))
    return cases


CASES = _cases()


def test_documents_have_runnable_examples() -> None:
    # Guards the reader: a regex that matched nothing would make every case below vanish.
    documents = {case.values[0].name for case in CASES}
    assert {"README.md", "index.md", "solvers.md", "errors.md", "crf.md"} <= documents
    assert len(CASES) >= 15


@pytest.mark.parametrize(("path", "blocks"), CASES)
def test_example_runs(path: Path, blocks: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = [why for b in blocks if (why := hooks.data_missing(b)) is not None]
    if missing:
        pytest.skip(missing[0])
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "docs_example"}
    for block in blocks:
        # Padded so that tracebacks give the line numbers of the Markdown file.
        code = compile("\n" * block.line + block.code, str(path.relative_to(ROOT)), "exec")
        exec(code, namespace)
