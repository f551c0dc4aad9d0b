"""Readers and writers of the text formats of extreme classification and learning to rank.

Formats (ids 0-based unless stated):

- **XC** (Extreme Classification Repository): header ``N D L``, then one line a point:
  ``l1,l2,... f:v f:v ...``; a point without labels starts with a space.
- **smat** (FastXML C++ sparse matrix): header ``rows cols``, then one line a row of
  space separated ``idx:val``; an empty line is an empty row.
- **Mulan ARFF**: ``@attribute`` lines, ``@data``, sparse rows ``{idx val, idx val}`` (or dense
  comma separated rows), plus an XML file naming the label attributes.
- **svmlight / LightGBM**: ``rel [qid:q] idx:val ... [# comment]`` with **1-based** feature
  indices (see ``read_svmlight``), optional LightGBM ``.query`` file of group sizes.

Separators are spaces and tabs; lines may end with ``\\r\\n``; ``.gz``/``.bz2`` files are
decompressed. Numbers are decimal (``1``, ``-0.5``, ``.5``, ``1e-3``, ``inf``, ``nan``).

How the fast readers avoid a Python loop over entries (the scanner is ``_textscan``): every
line is matched against the format's regular expression (RE2, vectorised by
``pyarrow.compute``); the file is cut into tokens with numpy; all numbers are converted by one
Arrow cast; ids are range-checked and rows sorted with numpy. Bibtex (4880 rows, 335k entries) parses in about 0.1 s.

Errors: a malformed file raises ``ValueError("<file>, line <n>: <what>")`` for its first bad
line. The fast reader only locates that line; the message comes from the per-line parser
(``_xc_row``, ``_smat_row``, ``_svm_row``, ``_arff_line``), which checks syntax, numbers, id
ranges and repeats (these parsers and the formats' regular expressions live in
``_lineparsers``). ``formats_naive`` holds the line-by-line twin readers built on the same
parsers, so both report the same line and message (tests compare them, fuzzed inputs too).

Matrices come back as CSR triples with the dtypes of ``_dtypes`` (indptr int64, indices int32,
values float32, float64 for svmlight), column ids sorted within each row; a repeated id in a
row is an error.
"""
from __future__ import annotations

import bz2
import gzip
import os
import xml.etree.ElementTree as ET
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._dtypes import INDEX, INDPTR, VALUE
from ._lineparsers import (
    _ARFF_RE,
    _CANONICAL_INT,
    _MAX_HEADER,
    _NUM,
    _SMAT_RE,
    _SVM_RE,
    _XC_RE,
    _arff_line,
    _int,
    _nominal_value,
    _qid_too_large,
    _smat_row,
    _svm_row,
    _tsv_row,
    _xc_row,
)
from ._textscan import _Body, _fail, _np, _show


def read_bytes(path) -> bytes:
    """The file's bytes, decompressed for ``.gz``/``.bz2``; a truncated or corrupt archive
    raises ValueError naming the file (the decompressors raise a bare EOFError/OSError)."""
    p = os.fspath(path)
    if not (p.endswith(".gz") or p.endswith(".bz2")):
        with open(p, "rb") as f:
            return f.read()
    with open(p, "rb") as raw:  # (a missing file stays FileNotFoundError)
        try:
            with (gzip.GzipFile(fileobj=raw, mode="rb") if p.endswith(".gz")
                  else bz2.BZ2File(raw, mode="rb")) as f:
                return f.read()
        except EOFError:
            raise ValueError(f"{path}: the compressed file is truncated (it ends before "
                             f"its end-of-stream marker)") from None
        except (OSError, zlib.error) as e:
            raise ValueError(f"{path}: not a valid {p.rsplit('.', 1)[1]} file: {e}") from None


def _narrow(values, dtype):
    """Cast (float64 -> float32: beyond its range becomes +-inf, as strtof does, silently)."""
    with np.errstate(over="ignore"):
        return values.astype(dtype)


# --------------------------------------------------------------------------- shared steps
def _split_header(path, data: bytes, names: str):
    """Return (header ints, body bytes); the header is the first line."""
    cut = data.find(b"\n")
    head, body = (data, b"") if cut < 0 else (data[:cut], data[cut + 1:])
    k = len(names.split())
    try:
        vals = [int(p) for p in head.split()]
        if len(vals) != k or min(vals) < 0:
            raise ValueError
    except ValueError:
        _fail(path, 1, f"the header must be '{names}' ({k} non-negative integers), got "
                       f"{_show(head)}")
    for name, v in zip(names.split(), vals):
        if v > _MAX_HEADER:  # (ids and Spark ML vector sizes are int32)
            _fail(path, 1, f"the header's {name}={v} exceeds {_MAX_HEADER}, the int32 limit")
    return vals, body


def _open(path, raw: bytes, first_line: int, pattern: str, comment: bytes = b""):
    """(full body, first line failing ``pattern`` or -1, the body before that line)."""
    full = _Body(path, raw, first_line, comment)
    j = full.first_bad(pattern)
    return full, j, (full if j < 0 else full.prefix(j))


def _csr(body: _Body, rows, cols, vals, n_rows: int):
    """Sort (rows, cols) within rows -> (indptr, indices int32, vals); a repeated (row, col)
    is recorded as a problem on line ``body.row_line[row]``."""
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64)
    if len(rows) > 1:
        ok = (rows[1:] > rows[:-1]) | ((rows[1:] == rows[:-1]) & (cols[1:] > cols[:-1]))
        if not ok.all():
            order = np.lexsort((cols, rows))
            rows, cols = rows[order], cols[order]
            vals = None if vals is None else vals[order]
            dup = (rows[1:] == rows[:-1]) & (cols[1:] == cols[:-1])
            if dup.any():
                body.found.append((int(body.row_line[rows[int(np.argmax(dup))]]), None))
    indptr = np.zeros(n_rows + 1, INDPTR)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    return indptr, cols.astype(INDEX), vals


def _more_rows(body: _Body, counts, n_rows: int, name: str) -> None:
    if body.n_lines > n_rows and counts[n_rows:].any():
        body.found.append((n_rows + int(np.argmax(counts[n_rows:] > 0)),
                           f"more rows than the header's {name}={n_rows}"))


def _fewer_rows(body: _Body, n_rows: int, name: str) -> None:
    if body.n_lines < n_rows:
        _fail(body.path, 1, f"the header says {name}={n_rows} but the file has "
                            f"{body.n_lines} rows")


# --------------------------------------------------------------------------- XC
def read_xc(path):
    """Read an Extreme Classification Repository text file.

    Parameters
    ----------
    path : str or path-like
        Header ``N D L``, then N lines ``l1,l2,... f:v f:v ...`` (0-based ids; a point
        without labels starts with a space).

    Returns
    -------
    X_indptr : int64 (N + 1,)
    X_indices : int32 (nnz,), sorted within rows
    X_data : float32 (nnz,)
    Y_indptr : int64 (N + 1,)
    Y_indices : int32 (total labels,), sorted within rows
    n_features : int (D)
    n_labels : int (L)

    Raises
    ------
    ValueError
        ``"<path>, line <n>: <what>"``: bad header, bad token, id out of the header's range,
        repeated id in a row, or a number of rows other than N.
    """
    data = read_bytes(path)
    (n_rows, n_feat, n_lab), raw = _split_header(path, data, "N D L")
    full, j, body = _open(path, raw, 2, _XC_RE)
    starts, ends, line, counts = body.tokens(b":,")
    _more_rows(body, counts, n_rows, "N")
    vals = body.numbers()
    b = body.b
    # labels: a line starting with a digit has (its commas + 1) label tokens first
    has_lab = np.zeros(body.n_lines, bool)
    nonempty = body.end > body.start
    has_lab[nonempty] = (b[body.start[nonempty]] >= 48) & (b[body.start[nonempty]] <= 57)
    commas = np.bincount(np.searchsorted(body.start, np.flatnonzero(b == 44), "right") - 1,
                         minlength=body.n_lines)[:body.n_lines]
    n_lab_line = np.where(has_lab, commas + 1, 0)
    first_tok = (np.cumsum(counts) - counts).astype(np.int64)
    is_lab = (np.arange(len(starts)) - np.repeat(first_tok, counts)) < n_lab_line[line]
    li, fi = np.flatnonzero(is_lab), np.flatnonzero(~is_lab)
    idx_sel, val_sel = fi[0::2], fi[1::2]
    body.flag(~(vals[li] < n_lab), li)              # (NaN after a refused token flags too)
    body.flag(~(vals[idx_sel] < n_feat), idx_sel)
    body.row_line = np.arange(body.n_lines)
    n_out = body.n_lines  # (never sized from the header: N is checked against the lines)
    X = _csr(body, line[idx_sel], np.nan_to_num(vals[idx_sel]), _narrow(vals[val_sel], VALUE),
             n_out)
    Y = _csr(body, line[li], np.nan_to_num(vals[li]), None, n_out)
    body.raise_first(full, j, lambda s: _xc_row(s, n_feat, n_lab))
    _fewer_rows(body, n_rows, "N")
    return (X[0][:n_rows + 1], X[1], X[2], Y[0][:n_rows + 1], Y[1], n_feat, n_lab)


def _format_rows(indptr, first, second, item_fmt: str, sep: str) -> list[str]:
    """Format each CSR row as ``item_fmt`` items joined by ``sep`` (C-level % formatting)."""
    counts = np.diff(indptr).tolist()
    fmts: dict = {}
    row_fmt = [fmts.setdefault(c, sep.join([item_fmt] * c)) for c in counts]
    if second is None:
        args, per = first.tolist(), 1
    else:
        args = [None] * (2 * len(first))
        args[0::2] = first.tolist()
        args[1::2] = second.tolist()
        per = 2
    out, lo, step = [], 0, 4096
    for a in range(0, len(counts), step):
        b = min(len(counts), a + step)
        hi = int(indptr[b] - indptr[0]) * per
        out.extend(("\n".join(row_fmt[a:b]) % tuple(args[lo:hi])).split("\n"))
        lo = hi
    return out


def write_xc(path, X_indptr, X_indices, X_data, Y_indptr, Y_indices, n_features: int,
             n_labels: int, value_format: str = "%.9g") -> None:
    """Write an XC text file that ``read_xc`` reads back (arrays as ``read_xc`` returns).

    ``value_format`` formats feature values; the default ``%.9g`` round-trips float32.
    """
    X_indptr, Y_indptr = np.asarray(X_indptr), np.asarray(Y_indptr)
    n = len(X_indptr) - 1
    if len(Y_indptr) - 1 != n:
        raise ValueError(f"X has {n} rows but Y has {len(Y_indptr) - 1}")
    feats = _format_rows(X_indptr, np.asarray(X_indices), np.asarray(X_data, np.float64),
                         "%d:" + value_format, " ")
    labs = _format_rows(Y_indptr, np.asarray(Y_indices), None, "%d", ",")
    lines = [f"{n} {int(n_features)} {int(n_labels)}"]
    lines += [(a + " " + f) if f or not a else a for a, f in zip(labs, feats)]
    with open(os.fspath(path), "w") as out:
        out.write("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- smat
def read_smat(path, value_dtype=VALUE):
    """Read a FastXML C++ sparse matrix text file.

    Parameters
    ----------
    path : str or path-like
        Header ``rows cols``, then one line a row of space separated 0-based ``idx:val``; an
        empty line is an empty row.
    value_dtype : numpy dtype, default float32

    Returns
    -------
    indptr : int64 (rows + 1,)
    indices : int32 (nnz,), sorted within rows
    data : value_dtype (nnz,)
    n_cols : int

    Raises
    ------
    ValueError
        ``"<path>, line <n>: <what>"``.
    """
    data = read_bytes(path)
    (n_rows, n_cols), raw = _split_header(path, data, "rows cols")
    full, j, body = _open(path, raw, 2, _SMAT_RE)
    starts, ends, line, counts = body.tokens(b":")
    _more_rows(body, counts, n_rows, "rows")
    vals = body.numbers()
    idx_sel = np.arange(0, len(starts), 2)
    body.flag(~(vals[idx_sel] < n_cols), idx_sel)
    body.row_line = np.arange(body.n_lines)
    out = _csr(body, line[idx_sel], np.nan_to_num(vals[idx_sel]),
               _narrow(vals[1::2], value_dtype), body.n_lines)
    body.raise_first(full, j, lambda s: _smat_row(s, n_cols))
    _fewer_rows(body, n_rows, "rows")
    return out[0][:n_rows + 1], out[1], out[2], n_cols


def write_smat(path, indptr, indices, data, n_cols: int, value_format: str = "%.6f") -> None:
    """Write a CSR matrix in the FastXML sparse text format (``idx:val``, 6 decimals)."""
    indptr = np.asarray(indptr)
    rows = _format_rows(indptr, np.asarray(indices), np.asarray(data, np.float64),
                        "%d:" + value_format, " ")
    with open(os.fspath(path), "w") as out:
        out.write("\n".join([f"{len(indptr) - 1} {int(n_cols)}"] + rows) + "\n")


# --------------------------------------------------------------------------- svmlight
def read_svmlight(path, query_path=None, num_features: int | None = None,
                  zero_based: bool = False):
    """Read an svmlight / LightGBM ranking text file.

    Parameters
    ----------
    path : str or path-like
        One line a row: ``rel [qid:q] idx:val ...`` with an optional ``# comment``; blank and
        comment-only lines are skipped. Either every row has ``qid:`` or none.
    query_path : str or path-like, optional
        LightGBM ``.query`` file: one group size a line, groups in row order, sizes summing to
        the number of rows. Not allowed together with ``qid:`` tokens.
    num_features : int, optional
        Number of columns; default: the largest column id + 1.
    zero_based : bool, default False
        The convention: feature indices are **1-based** as in svmlight and LightGBM's examples
        (``rank.train`` uses 1..300), so file index j is column j - 1 and an index 0 is an
        error. ``zero_based=True`` takes the indices as 0-based column ids.

    Returns
    -------
    labels : float64 (n,)
    qid : int64 (n,) or None
        ``qid:`` values, or 0, 1, 2... from the query file; None without either.
    indptr : int64 (n + 1,)
    indices : int32 (nnz,), sorted within rows
    data : float64 (nnz,)
    num_features : int
    """
    data = read_bytes(path)
    full, j, body = _open(path, data, 1, _SVM_RE, comment=b"#")
    starts, ends, line, counts = body.tokens(b":")
    t = len(starts)
    body.row_line = row_line = np.flatnonzero(counts > 0)
    n = len(row_line)
    ft = (np.cumsum(counts) - counts).astype(np.int64)[row_line]
    b = body.b
    # 'qid' can only be a row's second token (the regex says so)
    q1 = np.minimum(ft + 1, max(t - 1, 0))
    has_q = (counts[row_line] >= 3) & (ends[q1] - starts[q1] == 3) & (b[starts[q1]] == 113)
    body.flag_line(np.isin(np.arange(body.n_lines), row_line[has_q != has_q[:1]]),
                   "every row must have 'qid:', or none")
    is_name = np.zeros(t, bool)
    is_name[ft[has_q] + 1] = True
    is_qid = np.zeros(t, bool)
    is_qid[ft[has_q] + 2] = True
    sel = np.flatnonzero(~is_name & ~is_qid)
    vals = np.zeros(t)
    vals[sel] = body.numbers(sel)
    qids = body.integers(ft[has_q] + 2, _qid_too_large)  # (exact: never through float)
    labels = vals[ft]
    feat = np.ones(t, bool)
    feat[ft] = False
    feat[is_name] = False
    feat[ft[has_q] + 2] = False
    qid = qids if n and has_q.all() else None
    fi = np.flatnonzero(feat)
    idx_sel, val_sel = fi[0::2], fi[1::2]
    shift = 0 if zero_based else 1
    cols = vals[idx_sel] - shift
    body.flag(cols < 0, idx_sel)
    if num_features is not None:
        body.flag(~(cols < num_features), idx_sel)
    row_of_line = np.cumsum(counts > 0) - 1
    indptr, indices, vals = _csr(body, row_of_line[line[idx_sel]], np.nan_to_num(cols),
                                 vals[val_sel], n)
    body.raise_first(full, j, lambda s: _svm_row(s, zero_based, num_features))
    if num_features is None:
        num_features = int(indices.max()) + 1 if len(indices) else 0
    if query_path is not None:
        if qid is not None:
            raise ValueError(f"{path} has 'qid:' tokens and a query file {query_path} was "
                             "given too: use one of them")
        qid = _read_query(query_path, n)
    return labels, qid, indptr, indices, vals, int(num_features)


def _read_query(query_path, n_rows: int) -> np.ndarray:
    """Group sizes of a LightGBM ``.query`` file -> query id (0, 1, ...) of each row."""
    sizes = []
    for j, s in enumerate(read_bytes(query_path).decode("utf-8", "replace").split("\n")):
        if s.strip():
            try:
                sizes.append(_int(s.strip(), "group size"))
            except ValueError as e:
                _fail(query_path, j + 1, str(e))
    if sum(sizes) != n_rows:
        _fail(query_path, max(len(sizes), 1), f"the group sizes sum to {sum(sizes)}, the data "
                                              f"file has {n_rows} rows")
    return np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)


# --------------------------------------------------------------------------- Mulan ARFF
def _arff_header(path, data: bytes):
    """Parse the header: returns (attributes [(name, nominal values or None)], body, line)."""
    attrs = []
    pos, line = 0, 0
    while True:
        cut = data.find(b"\n", pos)
        raw = data[pos:] if cut < 0 else data[pos:cut]
        line += 1
        s = raw.decode("utf-8", "replace").strip()
        low = s.lower()
        if low.startswith("@data"):
            return attrs, (b"" if cut < 0 else data[cut + 1:]), line + 1
        if low.startswith("@attribute"):
            rest = s[len("@attribute"):].strip()
            if rest[:1] in ("'", '"'):
                q = rest.find(rest[0], 1)
                if q < 0:
                    _fail(path, line, "unterminated quoted attribute name")
                name, kind = rest[1:q], rest[q + 1:].strip()
            else:
                bits = rest.split(None, 1)
                if len(bits) != 2:
                    _fail(path, line, f"bad @attribute line {_show(raw)}")
                name, kind = bits
            if kind.startswith("{"):
                if not kind.endswith("}"):
                    _fail(path, line, f"bad nominal type {_show(kind)}")
                attrs.append((name, [v.strip().strip("'\"") for v in kind[1:-1].split(",")]))
            elif kind.lower() in ("numeric", "real", "integer"):
                attrs.append((name, None))
            else:
                _fail(path, line, f"attribute {name!r} has type {kind!r}: only numeric and "
                                  "nominal attributes are supported")
        elif s and not s.startswith("%") and not low.startswith("@relation"):
            _fail(path, line, f"unexpected header line {_show(raw)}")
        if cut < 0:
            _fail(path, line, "no @data line")
        pos = cut + 1


def _label_names(xml_path) -> list[str]:
    try:
        root = ET.fromstring(read_bytes(xml_path))
    except ET.ParseError as e:
        raise ValueError(f"{xml_path}: not valid XML: {e}") from None
    names = [el.get("name") for el in root.iter() if el.tag.rsplit("}", 1)[-1] == "label"]
    if not names or any(n is None for n in names):
        raise ValueError(f"{xml_path}: expected <label name=\"...\"/> elements")
    if len(set(names)) != len(names):
        raise ValueError(f"{xml_path}: a label is named twice")
    return names


def _arff_setup(arff_path, xml_path):
    data = read_bytes(arff_path)
    attrs, raw, first_line = _arff_header(arff_path, data)
    names = _label_names(xml_path)
    where = {a[0]: i for i, a in enumerate(attrs)}
    label_of = np.full(len(attrs), -1, np.int64)
    for j, name in enumerate(names):
        if name not in where:
            raise ValueError(f"{xml_path}: label {name!r} is not an attribute of {arff_path}")
        label_of[where[name]] = j
    feat_of = np.full(len(attrs), -1, np.int64)
    feat_of[label_of < 0] = np.arange(int((label_of < 0).sum()))
    return attrs, raw, first_line, names, label_of, feat_of


def read_arff_multilabel(arff_path, xml_path):
    """Read a Mulan multi-label dataset: ARFF data plus the XML naming the label attributes.

    Parameters
    ----------
    arff_path : str or path-like
        Numeric or nominal attributes; sparse ``{idx val, ...}`` rows (0-based attribute
        index) or dense comma separated rows; ``%`` comments. A nominal value counts as its
        index in the attribute's declared list (Weka's convention: ``{0,1}`` gives 0/1).
        ``?`` (missing) is NaN for a feature and an error for a label. Quoted values are
        not supported.
    xml_path : str or path-like
        ``<labels><label name="..."/>...``; label ids follow the XML's (document) order. The
        named attributes may be anywhere in the attribute list.

    Returns
    -------
    X_indptr : int64 (n + 1,)
    X_indices : int32 (nnz,)
        Ids over the non-label attributes, renumbered 0.. in attribute order.
    X_data : float32 (nnz,), zeros dropped
    Y_indptr : int64 (n + 1,)
    Y_indices : int32
        Ids (XML order) of the labels whose value is non-zero.
    n_features : int
    label_names : list[str]
        Label names in id order.
    """
    attrs, raw, first_line, names, label_of, feat_of = _arff_setup(arff_path, xml_path)
    n_attr = len(attrs)
    full, j, body = _open(arff_path, raw, first_line, _ARFF_RE, comment=b"%")
    b = body.b
    starts, ends, line, counts = body.tokens(b",{}")
    t = len(starts)
    sparse_line = np.zeros(body.n_lines, bool)
    sparse_line[np.searchsorted(body.start, np.flatnonzero(b == 123), "right") - 1] = True
    is_row = sparse_line | (counts > 0)
    body.flag_line(~sparse_line & (counts > 0) & (counts != n_attr))
    body.row_line = row_line = np.flatnonzero(is_row)
    row_of_line = np.cumsum(is_row) - 1
    first_tok = (np.cumsum(counts) - counts).astype(np.int64)
    pos = np.arange(t) - np.repeat(first_tok, counts)
    is_idx = sparse_line[line] & (pos % 2 == 0)
    ii = np.flatnonzero(is_idx)
    vi = np.flatnonzero(~is_idx)
    a_idx = body.numbers(ii)
    body.flag(~(a_idx < n_attr), ii)
    attr = pos.copy()
    attr[ii + 1] = np.where(a_idx < n_attr, a_idx, n_attr).astype(np.int64)
    attr = np.minimum(attr[vi], n_attr)       # n_attr: sentinel of a bad index (a problem)
    # values: one cast for numbers and for nominal values '0', '1', ... in their own order;
    # '?' and other nominal values go through _nominal_value one by one
    values = [a[1] for a in attrs] + [None]
    identity = np.array([v is not None and v == [str(k) for k in range(len(v))]
                         for v in values])
    nominal = np.array([v is not None for v in values])
    toks = body.strings(vi)
    num_ok = _np(pc.cast(pc.match_substring_regex(toks, f"^{_NUM}$"), pa.int8()), np.int8) > 0
    int_ok = _np(pc.cast(pc.match_substring_regex(toks, f"^(?:{_CANONICAL_INT})$"), pa.int8()),
                 np.int8) > 0
    valid = attr < n_attr
    fast = valid & np.where(identity[attr], int_ok, num_ok & ~nominal[attr])
    vals = np.full(len(vi), np.nan)
    vals[fast] = body.numbers(vi[fast])
    n_values = np.array([len(v) if v is not None else 0 for v in values])
    body.flag(fast & identity[attr] & ~(vals < n_values[attr]), vi)
    for k in np.flatnonzero(valid & ~fast):
        try:
            vals[k] = _nominal_value(body.token(vi[k]), attrs[attr[k]], label_of[attr[k]] >= 0)
        except ValueError:
            body.found.append((int(line[vi[k]]), None))
            break
    rows = row_of_line[line[vi]]
    _csr(body, rows, attr, None, len(row_line))            # a repeated attribute: an error
    body.raise_first(full, j, lambda s: _arff_line(s, attrs, label_of))
    lab = label_of[attr]                       # (no sentinel left: no problem was found)
    keep_l, keep_f = (lab >= 0) & (vals != 0), (lab < 0) & (vals != 0)
    n = len(row_line)
    Y_indptr, Y_indices, _ = _csr(body, rows[keep_l], lab[keep_l], None, n)
    X_indptr, X_indices, X_data = _csr(body, rows[keep_f], feat_of[attr[keep_f]],
                                       _narrow(vals[keep_f], VALUE), n)
    return X_indptr, X_indices, X_data, Y_indptr, Y_indices, int((label_of < 0).sum()), names


# --------------------------------------------------------------------------- dense TSV
def read_tsv(path, query_path=None, delimiter: str = "\t"):
    """Read a dense delimited text file, label first (LightGBM's ``binary.train`` layout).

    Parameters
    ----------
    path : str or path-like
        One row a line: ``label<TAB>x1<TAB>x2...``, no header; every row has the same number
        of fields; an empty field (or ``nan``) is a missing value; blank lines are skipped.
    query_path : str or path-like, optional
        LightGBM ``.query`` file of group sizes (as in ``read_svmlight``).
    delimiter : str, default tab

    Returns
    -------
    labels : float64 (n,)
    qid : int64 (n,) or None
    X : float64 (n, d), NaN where missing
    """
    import pyarrow.csv as pacsv

    raw = read_bytes(path)
    try:
        table = pacsv.read_csv(
            pa.BufferReader(raw),
            read_options=pacsv.ReadOptions(autogenerate_column_names=True),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(null_values=[""], strings_can_be_null=True))
        cols = [pc.cast(c, pa.float64()) for c in table.columns]
        X = np.column_stack([pc.fill_null(c, np.nan).to_numpy(zero_copy_only=False)
                             for c in cols]) if cols else np.zeros((0, 0))
        labels_ok = table.num_rows == 0 or cols[0].null_count == 0
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        labels_ok, X = False, None
    if X is None or not labels_ok:
        # locate and name the first bad line with the per-line parser
        n_cols = None
        for j, s in enumerate(raw.decode("utf-8", "replace").split("\n")):
            if not s.strip():
                continue
            try:
                n_cols = n_cols or len(s.rstrip("\r\n").split(delimiter))
                _tsv_row(s, n_cols, delimiter)
            except ValueError as e:
                _fail(path, j + 1, str(e))
        raise ValueError(f"{path}: not a delimited numeric file")  # pragma: no cover
    if X.shape[1] < 2:
        raise ValueError(f"{path}: a row needs a label and at least one feature, got "
                         f"{X.shape[1]} field(s)")
    labels = np.ascontiguousarray(X[:, 0])
    X = np.ascontiguousarray(X[:, 1:])
    qid = _read_query(query_path, len(labels)) if query_path is not None else None
    return labels, qid, X
