"""Griffe extension of the API reference (mkdocs.yml, mkdocstrings ``extensions``).

Two numpydoc habits that mkdocstrings would render badly are rewritten before rendering:

* Sphinx cross-reference roles (``:func:`fit```, ``:class:`CRFTagger```), shown literally
  otherwise, become inline code.
* The keyword options documented under ``**options`` (``loss : str`` and an indented
  description, as numpydoc nests them) would run together into one paragraph; they become a
  Markdown list, one item per option.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|obj|exc):`~?([^`]+)`")
_OPTIONS = re.compile(r"^(\*\*\w+)\n((?:(?:    .*)?\n)+)", re.MULTILINE)
_OPTION = re.compile(r"^    ([\w, ]+) : (.+)$", re.MULTILINE)


def _option_list(match: re.Match[str]) -> str:
    body = _OPTION.sub(r"    - ``\1`` (*\2*):", match[2])
    # Descriptions (8 spaces) continue their list item (2 spaces past the parameter's 4).
    return match[1] + "\n" + re.sub(r"^        ", "      ", body, flags=re.MULTILINE)


class NumpydocMarkdown(griffe.Extension):
    """Inline code for Sphinx roles, and a list for the ``**options`` of a docstring."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            text = _ROLE.sub(r"``\1``", obj.docstring.value)
            obj.docstring.value = _OPTIONS.sub(_option_list, text)
