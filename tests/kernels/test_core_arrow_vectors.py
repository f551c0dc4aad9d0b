"""VectorUDT Arrow columns -> CSR (``sparkxml_kernels.arrow_io``)."""
import numpy as np
import pyarrow as pa

from sparkxml_kernels import arrow_io


def _vectors(rows, size=5):
    """A VectorUDT-shaped struct column: ("s", {i: v}) sparse rows, ("d", [v...]) dense rows,
    None a null vector."""
    types, sizes, ind, val = [], [], [], []
    for r in rows:
        if r is None:
            types.append(None), sizes.append(None), ind.append(None), val.append(None)
        elif r[0] == "s":
            types.append(0), sizes.append(size)
            ind.append(list(r[1])), val.append([float(v) for v in r[1].values()])
        else:
            types.append(1), sizes.append(None), ind.append(None)
            val.append([float(v) for v in r[1]])
    arrays = [pa.array(types, pa.int8()), pa.array(sizes, pa.int32()),
              pa.array(ind, pa.list_(pa.int32())), pa.array(val, pa.list_(pa.float64()))]
    mask = pa.array([r is None for r in rows])
    return pa.StructArray.from_arrays(arrays, names=["type", "size", "indices", "values"],
                                      mask=mask)


def test_stored_counts_are_the_csr_row_lengths():
    """A sparse row keeps every stored entry (explicit zeros too), a dense row its non-zeros;
    the counts equal the row lengths vectors_to_csr builds, without building it."""
    col = _vectors([("s", {0: 1.0, 3: 0.0}), ("d", [0, 2, 0, 0, 5]), ("s", {}),
                    ("d", [0, 0, 0, 0, 0]), ("d", [1, 1, 1, 1, 1]), ("s", {4: -1.0})])
    counts = arrow_io.stored_counts(col)
    indptr, indices, data, d = arrow_io.vectors_to_csr(col, value_dtype=np.float64)
    assert d == 5
    np.testing.assert_array_equal(counts, [2, 2, 0, 0, 5, 1])
    np.testing.assert_array_equal(np.diff(indptr), counts)
    np.testing.assert_array_equal(indices, [0, 3, 1, 4, 0, 1, 2, 3, 4, 4])
    # all-sparse columns take the offsets as they are
    sparse = _vectors([("s", {1: 2.0}), ("s", {0: 1.0, 2: 0.0})])
    np.testing.assert_array_equal(arrow_io.stored_counts(sparse), [1, 2])
    # a null vector counts 0 here; the conversion names it
    nulls = _vectors([("s", {1: 2.0}), None, ("d", [0, 1, 0, 0, 0])])
    np.testing.assert_array_equal(arrow_io.stored_counts(nulls), [1, 0, 1])
