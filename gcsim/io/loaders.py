"""Rebuild the built-in combinatorial kinds from catalogue bundles.

Each loader rebuilds the object from the stored matrix (and the stored defining
data, e.g. connection sets), checks that the rebuilt assignment equals the
stored one, and leaves the exact identity check to ``obj.verify()``, which
:func:`gcsim.io.catalogue.load_object` always calls.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CatalogueError
from .catalogue import register_loader


def _same(obj: Any, arrays: dict[str, np.ndarray], kind: str) -> Any:
    if not np.array_equal(np.asarray(obj.assignment), arrays["assignment"].astype(np.int64)):
        raise CatalogueError(f"stored {kind} assignment differs from the one rebuilt from its defining data")
    return obj


def _bibd(arrays: dict[str, np.ndarray], meta: dict[str, Any]):
    from ..combinatorics.bibd import BIBD

    A = arrays["assignment"].astype(np.int64)
    blocks = [tuple(np.flatnonzero(A[:, j]).tolist()) for j in range(A.shape[1])]
    lam = meta["params"][4]
    obj = BIBD(A.shape[0], blocks, meta.get("construction") or "loaded", lam=lam,
               metadata=meta.get("object_metadata"))
    return _same(obj, arrays, "bibd")


def _srg(arrays: dict[str, np.ndarray], meta: dict[str, Any]):
    from ..combinatorics.srg_families import StronglyRegularGraph

    adj = arrays["adjacency"].astype(np.int64)
    A = arrays["assignment"].astype(np.int64)
    closed = bool(np.array_equal(A, adj + np.eye(adj.shape[0], dtype=np.int64)))
    obj = StronglyRegularGraph(adj, meta["params"], meta.get("construction") or "loaded", closed=closed,
                               metadata=meta.get("object_metadata"))
    return _same(obj, arrays, "srg")


def _coset(arrays: dict[str, np.ndarray], meta: dict[str, Any]):
    from ..combinatorics.coset import CosetBipartiteGraph

    k, m, delta = meta["params"]
    obj = CosetBipartiteGraph(k, m, delta, meta["group"], arrays["connection_sets"].tolist(),
                              meta.get("construction") or "loaded", metadata=meta.get("object_metadata"))
    return _same(obj, arrays, "coset")


def _biregular(arrays: dict[str, np.ndarray], meta: dict[str, Any]):
    from ..combinatorics.biregular import BiregularGraph

    obj = BiregularGraph(arrays["assignment"].astype(np.int64), tuple(meta["params"]),
                         meta.get("construction") or "loaded", meta.get("seed"),
                         metadata=meta.get("object_metadata"))
    return obj


register_loader("bibd", _bibd)
register_loader("srg", _srg)
register_loader("coset", _coset)
register_loader("biregular", _biregular)
