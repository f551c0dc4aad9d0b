"""Per-line parsers of the text formats in ``formats``: the grammar of one line, with the
checks and messages that name what is wrong in it.

The fast readers in ``formats`` match whole files against the regular expressions here and
call a line's parser only to name the first bad line; ``formats_naive`` parses every line
with them. Both therefore report the same line and message.
"""
from __future__ import annotations

import re

from ._textscan import _show

_INT = r"[0-9]+"
_NUM = r"(?:[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?i:inf|infinity|nan))"
_END = r"[ \t\r]*\n?$"
_XC_RE = rf"^(?:{_INT}(?:,{_INT})*)?(?:[ \t]+{_INT}:{_NUM})*{_END}"
_SMAT_RE = rf"^[ \t]*(?:{_INT}:{_NUM}(?:[ \t]+{_INT}:{_NUM})*)?{_END}"
_SVM_RE = rf"^[ \t]*(?:{_NUM}(?:[ \t]+qid:{_INT})?(?:[ \t]+{_INT}:{_NUM})*)?{_END}"
_AV = r"[^\s,{}'\"%]+"
_ARFF_RE = (rf"^[ \t]*(?:\{{[ \t]*(?:{_INT}[ \t]+{_AV}(?:[ \t]*,[ \t]*{_INT}[ \t]+{_AV})*)?"
            rf"[ \t]*\}}|{_AV}(?:[ \t]*,[ \t]*{_AV})*)?{_END}")
_NUMBER = re.compile(_NUM)
_DIGITS = re.compile(_INT)
_CANONICAL_INT = r"0|[1-9][0-9]*"
_MAX_HEADER = 2**31 - 1   # header counts and sizes: int32, as ids and vector sizes are
_MAX_QID = 2**63 - 1


def _split(s: str) -> list:
    """Tokens separated by spaces/tabs (other whitespace stays inside tokens, and fails)."""
    return [t for t in re.split(r"[ \t]+", s.rstrip("\r\n").rstrip(" \t\r")) if t]


def _int(tok: str, what: str) -> int:
    if not _DIGITS.fullmatch(tok):
        raise ValueError(f"bad {what} {_show(tok)} (expected a non-negative integer)")
    return int(tok)


def _num(tok: str, what: str = "value") -> float:
    if not _NUMBER.fullmatch(tok):
        raise ValueError(f"bad {what} {_show(tok)} (expected a number)")
    return float(tok)


def _pairs(tokens, what: str, limit=None, shift: int = 0):
    """Parse ``idx:val`` tokens; check ids (minus ``shift``) < ``limit`` and no repeats."""
    idx, vals = [], []
    for t in tokens:
        i, sep, v = t.partition(":")
        if not sep or ":" in v:
            raise ValueError(f"bad token {_show(t)}: expected '{what}:value'")
        idx.append(_int(i, f"{what} index") - shift)
        vals.append(_num(v))
    _check_ids(idx, what, limit, "index")
    return idx, vals


def _check_ids(ids, what: str, limit, kind: str = "id"):
    for i in ids:
        if limit is not None and i >= limit:
            raise ValueError(f"{what} {kind} {i} is out of range (< {limit} expected)")
    if len(set(ids)) != len(ids):
        raise ValueError(f"{what} {sorted(i for i in ids if ids.count(i) > 1)[0]} appears "
                         "twice in the row")


def _xc_row(s: str, n_feat=None, n_lab=None):
    """Parse one XC data line: (labels, indices, values). ValueError says what is wrong."""
    s = s.rstrip("\r\n")
    labels = []
    if s[:1] not in ("", " ", "\t"):
        lab, _, rest = s.replace("\t", " ").partition(" ")
        if ":" in lab:
            raise ValueError(f"bad label list {_show(lab)}: a point without labels starts "
                             "with a space")
        labels = [_int(t, "label id") for t in lab.split(",")]
        rest = s[len(lab):]
    else:
        rest = s
    idx, vals = _pairs(_split(rest), "feature", n_feat)
    _check_ids(labels, "label", n_lab)
    return labels, idx, vals


def _smat_row(s: str, n_cols=None):
    return _pairs(_split(s), "column", n_cols)


def _svm_row(s: str, zero_based: bool = False, num_features=None):
    """Parse one svmlight line (comment removed): None for a blank line, else
    (label, qid or None, column ids, values)."""
    toks = _split(s)
    if not toks:
        return None
    if ":" in toks[0]:
        raise ValueError(f"a row must start with its label, got {_show(toks[0])}")
    label = _num(toks[0], "label")
    qid, k = None, 1
    if len(toks) > 1 and toks[1].startswith("qid:"):
        qid, k = _int(toks[1][4:], "qid"), 2
        if qid > _MAX_QID:
            raise ValueError(_qid_too_large(toks[1][4:]))
    for t in toks[k:]:
        if t.startswith("qid:"):
            raise ValueError("'qid:' must come right after the label")
    shift = 0 if zero_based else 1
    idx, vals = _pairs(toks[k:], "feature", None, shift)
    if not zero_based and -1 in idx:
        raise ValueError("feature index 0 in a 1-based file (pass zero_based=True for 0-based "
                         "indices)")
    _check_ids(idx, "feature", num_features, "column")
    return label, qid, idx, vals


def _qid_too_large(tok) -> str:
    return f"qid {_show(tok)} does not fit in int64 (at most {_MAX_QID})"


def _arff_row(s: str, n_attr: int):
    """Split one ARFF data line (comment removed): None for a blank line, else
    (attribute indices, value strings)."""
    s = s.strip(" \t\r\n")
    if not s:
        return None
    if "'" in s or '"' in s:
        raise ValueError("quoted values are not supported")
    if s.startswith("{"):
        if not s.endswith("}") or s.count("{") != 1 or s.count("}") != 1:
            raise ValueError("a sparse row is '{index value, index value, ...}'")
        inner = s[1:-1].strip(" \t")
        idx, vals = [], []
        for item in ([] if not inner else inner.split(",")):
            parts = _split(item)
            if len(parts) != 2:
                raise ValueError(f"bad sparse entry {_show(item.strip())}: expected "
                                 "'index value'")
            a = _int(parts[0], "attribute index")
            if a >= n_attr:
                raise ValueError(f"attribute index {a} is out of range: the header declares "
                                 f"{n_attr} attributes")
            idx.append(a)
            vals.append(parts[1])
        return idx, vals
    vals = [v.strip(" \t") for v in s.split(",")]
    if any(len(_split(v)) != 1 or "{" in v or "}" in v for v in vals):
        raise ValueError("bad dense row: expected comma separated values")
    if len(vals) != n_attr:
        raise ValueError(f"a dense row has {n_attr} values, this one {len(vals)}")
    return list(range(n_attr)), vals


def _nominal_value(tok: str, attr, is_label: bool) -> float:
    """The value of a token for attribute ``attr`` = (name, nominal values or None)."""
    name, values = attr
    if tok == "?":
        if is_label:
            raise ValueError(f"missing value for label {name!r}")
        return float("nan")
    if values is not None:
        if tok not in values:
            raise ValueError(f"value {_show(tok)} is not one of attribute {name!r}'s values")
        return float(values.index(tok))
    return _num(tok)


def _arff_line(s: str, attrs, label_of):
    """Parse one ARFF data line: None for a blank line, else (attribute indices, values)."""
    r = _arff_row(s, len(attrs))
    if r is None:
        return None
    _check_ids(r[0], "attribute", None)
    return r[0], [_nominal_value(t, attrs[a], label_of[a] >= 0) for a, t in zip(*r)]


def _tsv_row(s: str, n_cols=None, delimiter: str = "\t") -> list:
    """Parse one dense line: label, then one value a feature; an empty field is missing."""
    toks = s.rstrip("\r\n").split(delimiter)
    if n_cols is not None and len(toks) != n_cols:
        raise ValueError(f"{len(toks)} fields, the first row has {n_cols}")
    if not toks[0].strip():
        raise ValueError("the label (first field) is empty")
    vals = [_num(toks[0].strip(), "label")]
    vals += [_num(t.strip(), "value") if t.strip() else float("nan") for t in toks[1:]]
    return vals
