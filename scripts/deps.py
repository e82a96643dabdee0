"""Print the pip requirements of the given groups, read from pyproject.toml (one source).

Groups: ``build`` (the build-system requirements), ``runtime`` (the package dependencies),
``lowest`` (the package dependencies pinned to their lowest declared versions, for the
compatibility job) and any optional-dependency extra. Used by the Makefile so the venvs are set
up from pyproject only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser from PyPI (the Makefile installs it)
    import tomli as tomllib


def lowest(requirement: str) -> str:
    """``name>=x,<y`` -> ``name==x``: the oldest version the package claims to support."""
    match = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*>=\s*([^,;\s]+).*", requirement)
    if match is None:
        msg = f"cannot pin {requirement!r} to its lowest version: expected name>=version"
        raise SystemExit(msg)
    return f"{match[1]}=={match[2]}"


def main(groups: list[str]) -> None:
    meta = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    project = meta["project"]
    reqs: list[str] = []
    for group in groups:
        if group == "build":
            reqs += meta["build-system"]["requires"]
        elif group == "runtime":
            reqs += project["dependencies"]
        elif group == "lowest":
            reqs += [lowest(r) for r in project["dependencies"]]
        else:
            reqs += project["optional-dependencies"][group]
    if "lowest" not in groups:
        reqs += project["dependencies"]
    # No quoting: the Makefile splits this on spaces, and no specifier contains one.
    print(" ".join(dict.fromkeys(reqs)))


if __name__ == "__main__":
    main(sys.argv[1:])
