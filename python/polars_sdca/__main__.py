"""``python -m polars_sdca``: the batch command line of :mod:`polars_sdca.cli`."""

from __future__ import annotations

import sys

from polars_sdca.cli import main

if __name__ == "__main__":
    sys.exit(main())
