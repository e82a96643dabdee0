"""Dump a benchmark data set as raw CSR arrays for the Rust profiling bench.

``crates/sdca-core/benches/epoch_cost.rs`` reads ``OUT.{indptr,indices,values,y}`` (raw
little-endian int64, uint32, float64, float64) and ``OUT.json`` (``n``, ``d``, ``nnz``), so
that a fit can be profiled (``valgrind --tool=callgrind``) or timed without Python::

    python benchmarks/dump_csr.py /tmp/conll
    cargo bench -p sdca-core --bench epoch_cost -- data=/tmp/conll loss=logistic l2=1e-4

The data set is the benchmarks' sparse one (``cases.load_sparse``: the CoNLL-2003 training
tokens, 203,621 rows x 94,204 features).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from cases import load_sparse


def main() -> None:
    """Write the arrays of one data set."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="output prefix")
    parser.add_argument(
        "--n-rows",
        type=int,
        default=None,
        help="a seeded subsample of N rows, as paths.py (its sparse rows: 50000)",
    )
    args = parser.parse_args()
    p = load_sparse(args.n_rows, 0)
    out = str(args.out)
    p.x.indptr.astype(np.int64).tofile(out + ".indptr")
    p.x.indices.astype(np.uint32).tofile(out + ".indices")
    p.x.data.astype(np.float64).tofile(out + ".values")
    p.y.astype(np.float64).tofile(out + ".y")
    Path(out + ".json").write_text(json.dumps({"n": p.n, "d": p.n_features, "nnz": p.nnz}))
    print(f"{out}: {p.n} x {p.n_features}, {p.nnz} non-zeros")


if __name__ == "__main__":
    main()
