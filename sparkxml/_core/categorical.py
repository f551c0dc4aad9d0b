"""Which features are categorical, read on the driver: ``categoricalCols`` names and the
vector column's ML attribute metadata (what ``VectorIndexer`` and ``StringIndexer`` +
``VectorAssembler`` write: nominal attributes, with their number of values when known).

Shared by every tree family (gradient boosting, decision trees and forests); each family
decides how it splits on the features named here.
"""
from __future__ import annotations


def _ml_attrs(dataset, col):
    try:
        return dataset.schema[col].metadata.get("ml_attr", {}).get("attrs", {})
    except (KeyError, AttributeError):
        return {}


def nominal_attrs(dataset, col):
    """(index -> name) of the vector column's nominal ML attributes and (name -> index) of
    all named ones."""
    nominal, named = {}, {}
    for kind, group in _ml_attrs(dataset, col).items():
        for a in group:
            i = a.get("idx")
            if not isinstance(i, int):
                continue
            if a.get("name"):
                named[str(a["name"])] = i
            if kind == "nominal":
                nominal[i] = a.get("name", f"f{i}")
    return nominal, named


def nominal_arity(dataset, spec: dict) -> dict:
    """(feature index -> number of categories) that the metadata declares: a vector column's
    nominal attributes with ``vals`` or ``num_vals`` (``VectorIndexer``, ``StringIndexer`` +
    ``VectorAssembler``), or a ``featuresCols`` column's own nominal attribute (a
    ``StringIndexer`` output column)."""
    out = {}
    if spec["kind"] == "vector":
        for a in _ml_attrs(dataset, spec["col"]).get("nominal", []):
            i, k = a.get("idx"), _arity(a)
            if isinstance(i, int) and k is not None:
                out[i] = k
        return out
    for j, c in enumerate(spec["cols"]):
        try:
            attr = dataset.schema[c].metadata.get("ml_attr", {})
        except (KeyError, AttributeError):
            continue
        if attr.get("type") == "nominal" and _arity(attr) is not None:
            out[j] = _arity(attr)
    return out


def _arity(attr: dict):
    if isinstance(attr.get("vals"), list):
        return len(attr["vals"])
    n = attr.get("num_vals")
    return int(n) if isinstance(n, int) and n > 0 else None


def categorical_features(dataset, spec: dict, names, d: int) -> list:
    """Sorted ids of the categorical features: ``categoricalCols`` ``names`` (column names
    of ``featuresCols``, or attribute names of the vector column) and nominal attributes."""
    names = list(names or [])
    ids = set()
    if spec["kind"] == "columns":
        cols = list(spec["cols"])
        for n in names:
            if n not in cols:
                raise ValueError(f"categoricalCols: '{n}' is not one of featuresCols {cols}")
            ids.add(cols.index(n))
    else:
        nominal, named = nominal_attrs(dataset, spec["col"])
        for n in names:
            if n not in named:
                raise ValueError(f"categoricalCols: '{n}' is not an attribute name of the "
                                 f"vector column '{spec['col']}' (known: "
                                 f"{sorted(named)[:20]})")
            ids.add(named[n])
        ids.update(i for i in nominal if 0 <= i < d)
    return sorted(ids)


def feature_name(spec: dict, f: int, dataset=None) -> str:
    """A feature's name for messages: its ``featuresCols`` column ``'c'``, else
    ``'<vector column>'[f]`` with its ML attribute name when it has one."""
    if spec["kind"] == "columns":
        return f"'{spec['cols'][f]}'"
    if dataset is not None:
        _, named = nominal_attrs(dataset, spec["col"])
        for n, i in named.items():
            if i == f:
                return f"'{spec['col']}'[{f}] ('{n}')"
    return f"'{spec['col']}'[{f}]"
