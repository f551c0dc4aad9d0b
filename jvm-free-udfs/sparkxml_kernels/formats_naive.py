"""Line-by-line twins of the readers in ``formats``: slow, obviously correct, same results and
same errors (the same per-line parsers explain both). Tests compare the vectorised readers
against them."""
from __future__ import annotations

import numpy as np

from ._dtypes import FLOAT, INDEX, INDPTR, VALUE
from ._lineparsers import _arff_line, _smat_row, _svm_row, _xc_row
from ._textscan import _fail
from .formats import _arff_setup, _read_query, _split_header, read_bytes


def _lines(raw: bytes) -> list:
    lines = raw.decode("utf-8", "replace").split("\n")
    if raw.endswith(b"\n") or not raw:
        lines.pop()
    return lines


def _to_csr(idx_rows, val_rows, dtype):
    """Lists of (ids, values) a row, each row sorted by id -> CSR."""
    indptr = np.zeros(len(idx_rows) + 1, INDPTR)
    np.cumsum([len(r) for r in idx_rows], out=indptr[1:])
    order = [sorted(range(len(r)), key=r.__getitem__) for r in idx_rows]
    indices = np.array([r[i] for r, o in zip(idx_rows, order) for i in o], dtype=INDEX)
    if val_rows is None:
        return indptr, indices, None
    with np.errstate(over="ignore"):
        vals = np.array([v[i] for v, o in zip(val_rows, order) for i in o]).astype(dtype)
    return indptr, indices, vals


def _check_count(path, lines, n_rows, name):
    if len(lines) < n_rows:
        _fail(path, 1, f"the header says {name}={n_rows} but the file has {len(lines)} rows")


def read_xc_naive(path):
    """Line-by-line twin of ``formats.read_xc``."""
    (n_rows, n_feat, n_lab), raw = _split_header(path, read_bytes(path), "N D L")
    lines = _lines(raw)
    X, V, Y = [], [], []
    for j, s in enumerate(lines):
        try:
            lab, idx, val = _xc_row(s, n_feat, n_lab)
        except ValueError as e:
            _fail(path, j + 2, str(e))
        if j >= n_rows:
            if lab or idx:
                _fail(path, j + 2, f"more rows than the header's N={n_rows}")
            continue
        X.append(idx)
        V.append(val)
        Y.append(lab)
    _check_count(path, lines, n_rows, "N")
    return (*_to_csr(X, V, VALUE), *_to_csr(Y, None, None)[:2], n_feat, n_lab)


def read_smat_naive(path, value_dtype=VALUE):
    """Line-by-line twin of ``formats.read_smat``."""
    (n_rows, n_cols), raw = _split_header(path, read_bytes(path), "rows cols")
    lines = _lines(raw)
    X, V = [], []
    for j, s in enumerate(lines):
        try:
            idx, val = _smat_row(s, n_cols)
        except ValueError as e:
            _fail(path, j + 2, str(e))
        if j >= n_rows:
            if idx:
                _fail(path, j + 2, f"more rows than the header's rows={n_rows}")
            continue
        X.append(idx)
        V.append(val)
    _check_count(path, lines, n_rows, "rows")
    return (*_to_csr(X, V, value_dtype), n_cols)


def read_svmlight_naive(path, query_path=None, num_features=None, zero_based=False):
    """Line-by-line twin of ``formats.read_svmlight``."""
    labels, qids, X, V = [], [], [], []
    for j, s in enumerate(read_bytes(path).decode("utf-8", "replace").split("\n")):
        try:
            r = _svm_row(s.split("#", 1)[0], zero_based, num_features)
        except ValueError as e:
            _fail(path, j + 1, str(e))
        if r is None:
            continue
        if qids and (qids[0] is None) != (r[1] is None):
            _fail(path, j + 1, "every row must have 'qid:', or none")
        labels.append(r[0])
        qids.append(r[1])
        X.append(r[2])
        V.append(r[3])
    indptr, indices, vals = _to_csr(X, V, FLOAT)
    if num_features is None:
        num_features = int(indices.max()) + 1 if len(indices) else 0
    qid = None if not qids or qids[0] is None else np.array(qids, np.int64)
    if query_path is not None:
        if qid is not None:
            raise ValueError(f"{path} has 'qid:' tokens and a query file {query_path} was "
                             "given too: use one of them")
        qid = _read_query(query_path, len(X))
    return np.array(labels, FLOAT), qid, indptr, indices, vals, int(num_features)


def read_arff_multilabel_naive(arff_path, xml_path):
    """Line-by-line twin of ``formats.read_arff_multilabel``."""
    attrs, raw, first_line, names, label_of, feat_of = _arff_setup(arff_path, xml_path)
    X, V, Y = [], [], []
    for j, s in enumerate(raw.decode("utf-8", "replace").split("\n")):
        try:
            r = _arff_line(s.split("%", 1)[0], attrs, label_of)
        except ValueError as e:
            _fail(arff_path, j + first_line, str(e))
        if r is None:
            continue
        x, v, y = [], [], []
        for a, value in zip(*r):
            if value != 0:
                if label_of[a] >= 0:
                    y.append(int(label_of[a]))
                else:
                    x.append(int(feat_of[a]))
                    v.append(value)
        X.append(x)
        V.append(v)
        Y.append(y)
    return (*_to_csr(X, V, VALUE), *_to_csr(Y, None, None)[:2], int((label_of < 0).sum()),
            names)
