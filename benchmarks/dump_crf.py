"""Dump a CRF benchmark problem as raw arrays for the Rust epoch example.

``crates/sdca-core/examples/crf_epoch.rs`` reads ``OUT.{indptr,indices,values,starts,y}`` (raw
little-endian int64, uint32, float64, uint64, uint32) and ``OUT.json`` (``tokens``,
``attributes``, ``labels``, ``sequences``), so that a CRF epoch can be timed or profiled
(``perf record``, ``valgrind --tool=callgrind``) without Python::

    python benchmarks/dump_crf.py /tmp/crf-ner
    cargo run --release -p sdca-core --example crf_epoch -- /tmp/crf-ner 3

The problems are ``crf_common.load_problem``'s (``ner``: CoNLL-2003 English NER, 14,041
sentences, 203,621 tokens, 9 labels, 132,745 attributes; ``chunk`` and ``pos``: the same file
tagged with its chunk and part-of-speech tags; ``ocr``: the OCR letters, folds 0-8, 26 labels,
128 binary pixels, written as the CSR of their non-zero pixels: the same scores as the dense
rows). ``--subset`` keeps the first sequences (for short callgrind runs).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import scipy.sparse
from crf_common import load_problem


def main() -> None:
    """Write the arrays of one problem."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="output prefix")
    parser.add_argument("--problem", default="ner", choices=["ner", "chunk", "pos", "ocr"])
    parser.add_argument("--subset", type=int, default=None, help="keep the first sequences")
    args = parser.parse_args()
    p = load_problem(args.problem, subset=args.subset)
    out = str(args.out)
    x = p.x if scipy.sparse.issparse(p.x) else scipy.sparse.csr_matrix(p.x)
    x.sort_indices()
    x.indptr.astype(np.int64).tofile(out + ".indptr")
    x.indices.astype(np.uint32).tofile(out + ".indices")
    x.data.astype(np.float64).tofile(out + ".values")
    np.concatenate([[0], np.cumsum(p.lengths)]).astype(np.uint64).tofile(out + ".starts")
    p.y.astype(np.uint32).tofile(out + ".y")
    meta = {"tokens": len(p.y), "attributes": len(p.attributes), "labels": len(p.labels), "sequences": p.n}
    Path(out + ".json").write_text(json.dumps(meta))
    print(f"{out}: {p.describe()}")


if __name__ == "__main__":
    main()
