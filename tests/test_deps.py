"""``scripts/deps.py`` (the Makefile's reader of pyproject) on a Python without ``tomllib``.

The package declares Python 3.10, whose standard library has no ``tomllib``: ``make venv``
then reads pyproject with ``tomli`` (the same parser from PyPI, in the ``test`` extra). The
3.10 case is simulated by blocking ``tomllib`` before the script runs; the output must equal
the normal run's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "scripts" / "deps.py"

# Runs the script as __main__ with `import tomllib` failing as on Python 3.10, and reports on
# stderr which parser it used.
WITHOUT_TOMLLIB = """
import runpy, sys
sys.modules["tomllib"] = None  # `import tomllib` now raises ModuleNotFoundError
sys.argv = [sys.argv[1], *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
print("parser:", "tomli" if "tomli" in sys.modules else "tomllib", file=sys.stderr)
"""


@pytest.mark.parametrize("groups", [["build", "test", "dev"], ["lowest", "test"], ["runtime"]])
def test_deps_without_tomllib_prints_the_same(groups: list[str]) -> None:
    normal = subprocess.run(
        [sys.executable, str(SCRIPT), *groups], capture_output=True, text=True, check=True
    )
    blocked = subprocess.run(
        [sys.executable, "-c", WITHOUT_TOMLLIB, str(SCRIPT), *groups],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "parser: tomli" in blocked.stderr
    assert blocked.stdout == normal.stdout
    assert "polars>=" in normal.stdout or "polars==" in normal.stdout
