"""One-hot field encoding of categorical columns, without Spark.

A :class:`FieldVocabulary` maps each categorical column to a field of the feature vector: the
column's categories (learned at fit, most frequent first) take the indices
``field_starts[c] ... field_starts[c + 1] - 1``. A row gets value 1.0 at the index of its
category in every column; a list-valued column (e.g. a movie's genres) sets 1.0 at each of
its categories. The same object encodes in a Spark task (``sparkxml.fm.fields.FieldEncoder``)
and when serving without Spark (``sparkxml_kernels.load_model``).

Unseen categories and nulls follow ``handle_invalid``: "keep" leaves that field empty for the
row (as a missing attribute: the row keeps its other fields), "skip" drops the row, "error"
raises naming the column and the value.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._dtypes import FLOAT, INDEX, INDPTR

__all__ = ["FieldVocabulary", "FIELD_KEYS"]

FIELD_KEYS = ("field_starts", "n_columns")


def _as_array(col) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if isinstance(col, pa.Array):
        return col
    return pa.array(col)


def _value_type(vocab: np.ndarray):
    return pa.string() if vocab.dtype.kind == "U" else pa.int64()


class FieldVocabulary:
    """Categories of each column, in field order.

    Parameters
    ----------
    vocabs : list of 1-D numpy arrays (int64 or unicode), one a column, no repeats
    names : list of str, the column names (for messages)
    """

    def __init__(self, vocabs, names):
        self.vocabs = [np.asarray(v) for v in vocabs]
        for v, name in zip(self.vocabs, names):
            if v.ndim != 1 or v.dtype.kind not in "iU":
                raise ValueError(f"vocabulary of column '{name}' must be a 1-D int or str array")
            if v.size == 0:
                raise ValueError(f"column '{name}' has no category")
        self.names = [str(n) for n in names]
        if len(self.names) != len(self.vocabs):
            raise ValueError("one name per vocabulary")
        sizes = [v.size for v in self.vocabs]
        self.field_starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._sets = [pa.array(v.tolist(), _value_type(v)) for v in self.vocabs]

    @property
    def n_features(self) -> int:
        return int(self.field_starts[-1])

    def _column(self, c, col, handle_invalid, n):
        """(rows int64, feature ids int64, bad-row mask) of column c."""
        arr = _as_array(col)
        target = _value_type(self.vocabs[c])
        listy = pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)
        null_rows = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), bool)
        if listy:
            flat = arr.flatten()
            parents = np.asarray(pc.list_parent_indices(arr).to_numpy(zero_copy_only=False),
                                 np.int64)
        else:
            flat = arr
            parents = np.arange(n, dtype=np.int64)
        if pa.types.is_boolean(flat.type):
            flat = flat.cast(pa.int64())
        try:
            flat = flat.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise TypeError(f"inputCols: column '{self.names[c]}' has type {arr.type}, but was "
                            f"fit on {'strings' if target == pa.string() else 'integers'}") \
                from None
        idx = pc.index_in(flat, value_set=self._sets[c])
        present = np.asarray(idx.is_valid().to_numpy(zero_copy_only=False), bool)
        ids = np.asarray(idx.fill_null(0).to_numpy(zero_copy_only=False), np.int64)
        valid = np.asarray(flat.is_valid().to_numpy(zero_copy_only=False), bool)
        unseen = ~present & valid
        # a null inside a row's list is a null of that row too
        null_in = np.zeros(n, bool)
        if listy and not valid.all():
            null_in[parents[~valid]] = True
        if handle_invalid == "error":
            if null_rows.any() or null_in.any():
                where = "" if null_rows.any() else " inside its array"
                row = int(np.flatnonzero(null_rows if null_rows.any() else null_in)[0])
                raise ValueError(f"inputCols: column '{self.names[c]}' holds a null{where} "
                                 f"(row {row} of this batch); set handleInvalid to 'keep' or "
                                 f"'skip'")
            if unseen.any():
                v = flat[int(np.flatnonzero(unseen)[0])].as_py()
                raise ValueError(f"inputCols: column '{self.names[c]}' holds the value {v!r}, "
                                 f"unseen when the encoder was fit; set handleInvalid to "
                                 f"'keep' or 'skip'")
        bad = null_rows | null_in
        if unseen.any():
            bad[parents[unseen]] = True
        return parents[present], ids[present] + self.field_starts[c], bad

    def encode(self, columns, handle_invalid: str = "keep"):
        """Encode one batch.

        Parameters
        ----------
        columns : list of arrays (pyarrow, numpy or lists), one per vocabulary, same length
        handle_invalid : "keep" | "skip" | "error"

        Returns
        -------
        indptr int64 (r + 1,), indices int32, data float64 (ones), keep bool (n,): the rows
        encoded (all rows but the skipped ones; r = keep.sum()).
        """
        if len(columns) != len(self.vocabs):
            raise ValueError(f"{len(columns)} columns for {len(self.vocabs)} fields")
        if handle_invalid not in ("keep", "skip", "error"):
            raise ValueError(f"handle_invalid must be 'keep', 'skip' or 'error', got "
                             f"{handle_invalid!r}")
        n = len(_as_array(columns[0])) if columns else 0
        rows, feats, bad = [], [], np.zeros(n, bool)
        for c, col in enumerate(columns):
            if len(_as_array(col)) != n:
                raise ValueError("columns have different lengths")
            r, f, b = self._column(c, col, handle_invalid, n)
            rows.append(r)
            feats.append(f)
            bad |= b
        keep = ~bad if handle_invalid == "skip" else np.ones(n, bool)
        r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        f = np.concatenate(feats) if feats else np.zeros(0, np.int64)
        sel = keep[r]
        r, f = r[sel], f[sel]
        order = np.lexsort((f, r))
        r, f = r[order], f[order]
        if r.size:  # a category repeated in one row's list counts once
            first = np.ones(r.size, bool)
            first[1:] = (r[1:] != r[:-1]) | (f[1:] != f[:-1])
            r, f = r[first], f[first]
        new_row = np.cumsum(keep) - 1
        counts = np.bincount(new_row[r], minlength=int(keep.sum())) if r.size else \
            np.zeros(int(keep.sum()), np.int64)
        indptr = np.zeros(int(keep.sum()) + 1, INDPTR)
        np.cumsum(counts, out=indptr[1:])
        return indptr, f.astype(INDEX), np.ones(f.size, FLOAT), keep

    # ------------------------------------------------------------------ arrays
    def to_arrays(self) -> dict:
        out = {"field_starts": self.field_starts,
               "n_columns": np.asarray(len(self.vocabs), np.int64)}
        for c, v in enumerate(self.vocabs):
            out[f"vocab_{c}"] = v
            out[f"name_{c}"] = np.asarray(self.names[c])
        return out

    @classmethod
    def from_arrays(cls, a: dict) -> "FieldVocabulary":
        m = int(a["n_columns"])
        voc = cls([a[f"vocab_{c}"] for c in range(m)], [str(a[f"name_{c}"]) for c in range(m)])
        if not np.array_equal(voc.field_starts, np.asarray(a["field_starts"])):
            raise ValueError("field_starts do not match the vocabularies")
        return voc

    @classmethod
    def from_directory(cls, path: str, meta: dict | None = None):
        """Load a saved ``FieldEncoderModel`` (``sparkxml_kernels.load_model``); its
        ``handleInvalid`` param becomes the default of :meth:`encode`."""
        from ..persist import ModelFormatError, load_arrays

        arrays = load_arrays(path, required=FIELD_KEYS)
        try:
            voc = cls.from_arrays(arrays)
        except (ValueError, KeyError) as e:
            raise ModelFormatError(f"{path}: {e}") from None
        return voc
