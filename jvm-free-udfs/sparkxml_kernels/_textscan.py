"""The vectorised text scanner under the readers of ``formats``: a file body as numpy line
offsets and tokens, Arrow casts of whole token columns, and the record of the problems seen
(the reader then raises for the earliest one, explained by its per-line parser).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def _np(arr, dtype) -> np.ndarray:
    """A null-free primitive Arrow array as numpy (``to_numpy`` would import pandas: 0.4 s)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr),
                         offset=arr.offset * np.dtype(dtype).itemsize)


def _fail(path, line: int, what: str):
    raise ValueError(f"{path}, line {line}: {what}")


def _show(token) -> str:
    s = token.decode("utf-8", "replace") if isinstance(token, bytes) else str(token)
    return repr(s if len(s) <= 40 else s[:37] + "...")


class _Body:
    """The lines of a text body, as numpy offsets, tokens, and Arrow binary arrays."""

    def __init__(self, path, data: bytes, first_line: int, comment: bytes = b""):
        self.path, self.first_line = path, first_line
        b = np.frombuffer(data, dtype=np.uint8)
        n = len(b)
        nl = np.flatnonzero(b == 10)
        if comment and (b == comment[0]).any():
            c = np.flatnonzero(b == comment[0])     # blank from a line's first comment byte
            c_line = np.searchsorted(nl, c)
            keep = np.ones(len(c), bool)
            keep[1:] = c_line[1:] != c_line[:-1]
            mark = np.zeros(n + 1, np.int32)
            mark[c[keep]] += 1
            np.add.at(mark, np.append(nl, n)[c_line[keep]], -1)
            b = np.where(np.cumsum(mark[:-1]) > 0, np.uint8(32), b)
        self.b, self.n = b, n
        self.n_lines = len(nl) + (1 if n and b[-1] != 10 else 0)
        self.start = np.concatenate(([0], nl + 1))[:self.n_lines].astype(np.int64)
        self.end = np.concatenate((nl, [n]))[:self.n_lines].astype(np.int64)
        self.found: list = []          # (body line, fixed message or None): problems seen

    def prefix(self, j: int) -> "_Body":
        """The first ``j`` lines."""
        sub = _Body.__new__(_Body)
        sub.path, sub.first_line, sub.found = self.path, self.first_line, self.found
        cut = int(self.start[j])
        sub.b, sub.n, sub.n_lines = self.b[:cut], cut, j
        sub.start, sub.end = self.start[:j], self.end[:j]
        return sub

    def text(self, j: int) -> str:
        return bytes(self.b[self.start[j]:self.end[j]]).decode("utf-8", "replace")

    def fail(self, j: int, what: str):
        _fail(self.path, int(j) + self.first_line, what)

    def _binary(self, offsets, data, count):
        large = self.n >= 2**31 - 1
        return (pa.LargeBinaryArray if large else pa.BinaryArray).from_buffers(
            pa.large_binary() if large else pa.binary(), count,
            [None, pa.py_buffer(offsets.astype(np.int64 if large else np.int32)),
             pa.py_buffer(data)])

    def first_bad(self, pattern: str) -> int:
        """Index of the first line not matching ``pattern``, or -1."""
        if self.n_lines == 0:
            return -1
        arr = self._binary(np.append(self.start, self.n), self.b, self.n_lines)
        return _first_false(pc.match_substring_regex(arr, pattern))

    def tokens(self, delims: bytes):
        """Cut into tokens: maximal runs of bytes that are neither whitespace nor ``delims``.

        Returns (starts, ends, line, counts per line) as int64 arrays.
        """
        table = np.ones(256, bool)
        table[list(b" \t\r\n\f\v" + delims)] = False
        tok = table[self.b]
        edge = np.diff(tok.view(np.int8), prepend=np.int8(0), append=np.int8(0))
        starts = np.flatnonzero(edge == 1)
        ends = np.flatnonzero(edge == -1)
        self._tok, self._starts, self._ends = tok, starts, ends
        counts = np.searchsorted(starts, self.end) - np.searchsorted(starts, self.start)
        self.line = np.repeat(np.arange(self.n_lines), counts)
        return starts, ends, self.line, counts

    def token(self, i: int) -> str:
        return bytes(self.b[self._starts[i]:self._ends[i]]).decode("utf-8", "replace")

    def strings(self, select=None):
        """The tokens (or the ``select`` ed ones) as an Arrow binary array; the token bytes
        are compacted with a mask, no Python object a token."""
        if select is None:
            starts, ends, mask = self._starts, self._ends, self._tok
        else:
            starts, ends = self._starts[select], self._ends[select]
            mark = np.zeros(self.n + 1, np.int8)
            mark[starts] = 1
            mark[ends] -= 1
            mask = np.cumsum(mark[:-1], dtype=np.int8) > 0
        offs = np.zeros(len(starts) + 1, np.int64)
        np.cumsum(ends - starts, out=offs[1:])
        return self._binary(offs, self.b[mask], len(starts))

    def numbers(self, select=None) -> np.ndarray:
        """float64 of the tokens (all, or ``select``) in one cast. A token the cast refuses is
        recorded as a problem; it and the tokens after it come back NaN."""
        return self._cast(select, pa.float64(), np.float64, lambda t: f"bad number {_show(t)}")

    def integers(self, select, message) -> np.ndarray:
        """int64 of the ``select`` ed tokens (digits only) in one cast, never through float:
        a token beyond int64 is recorded as a problem (``message(token)``); it and the
        tokens after it come back 0."""
        return self._cast(select, pa.int64(), np.int64, message)

    def _cast(self, select, typ, dtype, message) -> np.ndarray:
        arr = self.strings(select)
        try:
            return _np(pc.cast(arr, typ), dtype)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            lo, hi = 0, len(arr)                    # bisect to the first token that fails
            while hi - lo > 1:
                mid = (lo + hi) // 2
                try:
                    pc.cast(arr.slice(lo, mid - lo), typ)
                    lo = mid
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    hi = mid
            out = np.full(len(arr), np.nan if dtype == np.float64 else 0, dtype)
            if lo:
                out[:lo] = _np(pc.cast(arr.slice(0, lo), typ), dtype)
            i = lo if select is None else int(select[lo])
            self.found.append((int(self.line[i]), message(self.token(i))))
            return out

    def flag(self, bad, select=None, message=None) -> None:
        """Record the line of the first token where ``bad`` holds (``select``: token ids)."""
        if len(bad) and bad.any():
            k = int(np.argmax(bad))
            self.found.append((int(self.line[k if select is None else select[k]]), message))

    def flag_line(self, bad_lines, message=None) -> None:
        if len(bad_lines) and bad_lines.any():
            self.found.append((int(np.argmax(bad_lines)), message))

    def raise_first(self, full: "_Body", j: int, row_parser) -> None:
        """Raise for the earliest problem: the regex's first bad line ``j`` or a recorded one.

        The message is the per-line parser's account of that line when it finds a fault, else
        the recorded message (file-level rules: row counts, qid consistency).
        """
        found = list(self.found) + ([(j, None)] if j >= 0 else [])
        if not found:
            return
        line = min(f[0] for f in found)
        try:
            row_parser(full.text(line))
        except ValueError as e:
            full.fail(line, str(e))
        msgs = [m for ln, m in found if ln == line and m]
        full.fail(line, msgs[0] if msgs else f"malformed line {_show(full.text(line))}")


def _first_false(bools) -> int:
    # (booleans to numpy, and Python scalars to Arrow, import pandas: 0.4 s; avoided)
    ok = _np(pc.cast(bools, pa.int8()), np.int8)
    return -1 if ok.all() else int(np.argmin(ok))
