"""CSR rows written in a global order from pieces (sparkxml_kernels.csr_rows) against the
stack-and-take twin: values, dtypes, empty pieces and rows, and the pieces let go."""
import numpy as np
import pytest
import scipy.sparse as sp

from sparkxml_kernels.csr_rows import rows_in_order, rows_in_order_naive


def _pieces(rng, dtype, sizes):
    out = []
    for n in sizes:
        m = sp.random(n, 50, density=0.1, format="csr", random_state=rng)
        m.data = m.data > 0.5 if dtype is bool else (m.data * 10).astype(dtype)
        ip = m.indptr.astype(np.int32 if n % 2 else np.int64)
        out.append((ip, m.indices.astype(np.int32), m.data))
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8, bool])
def test_rows_in_order_is_the_stacked_rows_taken(dtype):
    rng = np.random.default_rng(3)
    pieces = _pieces(rng, dtype, [7, 0, 13, 1, 20])
    order = rng.permutation(41)
    want = rows_in_order_naive(pieces, order)
    assert len(pieces) == 5  # the twin leaves them
    got = rows_in_order(list(pieces), order)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert got[0].dtype == np.int64 and got[2].dtype == np.dtype(dtype)
    held = list(pieces)
    rows_in_order(held, order)
    assert held == []


def test_rows_in_order_identity_and_errors():
    rng = np.random.default_rng(4)
    pieces = _pieces(rng, np.float64, [5, 6])
    ip, ix, dv = rows_in_order(list(pieces), np.arange(11))
    np.testing.assert_array_equal(ix, np.concatenate([p[1] for p in pieces]))
    np.testing.assert_array_equal(dv, np.concatenate([p[2] for p in pieces]))
    with pytest.raises(ValueError, match="order has 10 rows, the pieces 11"):
        rows_in_order(list(pieces), np.arange(10))
    ip, ix, dv = rows_in_order([], np.zeros(0, np.int64))
    assert ip.tolist() == [0] and len(ix) == len(dv) == 0
