"""Print the pip requirements of the given groups, read from pyproject.toml (one source).

Groups: ``build`` (the build-system requirements), ``runtime`` (the package dependencies) and
any optional-dependency extra. Used by the Makefile so the venv is set up from pyproject only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import tomllib


def main(groups: list[str]) -> None:
    meta = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    project = meta["project"]
    reqs: list[str] = []
    for group in groups:
        if group == "build":
            reqs += meta["build-system"]["requires"]
        elif group == "runtime":
            reqs += project["dependencies"]
        else:
            reqs += project["optional-dependencies"][group]
    reqs += project["dependencies"]
    # No quoting: the Makefile splits this on spaces, and no specifier contains one.
    print(" ".join(dict.fromkeys(reqs)))


if __name__ == "__main__":
    main(sys.argv[1:])
