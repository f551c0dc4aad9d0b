"""Truncated, corrupt and lying data files: a ValueError that names the file (and the line
where there is one), never a bare EOFError/OverflowError, a silently wrong value, or an
allocation sized from a header number."""
import bz2
import gzip
import tracemalloc

import numpy as np
import pytest

from sparkxml_kernels import formats, formats_naive

XC = b"3 6 4\n0,1 0:1 2:0.5\n 1:2\n3 5:1\n"
SMAT = b"3 6\n0:1 2:0.5\n1:2\n5:1\n"
SVM = b"1 qid:1 1:1 3:0.5\n0 qid:1 2:2\n2 qid:7 6:1\n"
ARFF = (b"@relation r\n@attribute f0 numeric\n@attribute f1 numeric\n@attribute l0 {0,1}\n"
        b"@data\n{0 1.5,2 1}\n{1 2}\n")
XML = b'<labels xmlns="http://mulan.sourceforge.net/labels"><label name="l0"/></labels>'

READERS = {
    "xc": (XC, formats.read_xc),
    "smat": (SMAT, formats.read_smat),
    "svmlight": (SVM, formats.read_svmlight),
}


def _compress(kind, raw):
    return gzip.compress(raw * 200) if kind == "gz" else bz2.compress(raw * 200)


@pytest.mark.parametrize("fmt", list(READERS))
@pytest.mark.parametrize("kind", ["gz", "bz2"])
def test_truncated_archive_names_the_file(tmp_path, fmt, kind):
    raw, read = READERS[fmt]
    blob = _compress(kind, raw)
    path = tmp_path / f"data.txt.{kind}"
    path.write_bytes(blob[:len(blob) // 2])
    with pytest.raises(ValueError, match=r"data\.txt\.%s: the compressed file is truncated"
                       % kind):
        read(str(path))


@pytest.mark.parametrize("kind", ["gz", "bz2"])
def test_corrupt_archive_names_the_file(tmp_path, kind):
    path = tmp_path / f"data.txt.{kind}"
    path.write_bytes(b"this is not compressed at all" * 10)
    with pytest.raises(ValueError, match=rf"data\.txt\.{kind}: not a valid {kind} file"):
        formats.read_xc(str(path))


def test_truncated_arff_archive_names_the_file(tmp_path):
    arff, xml = tmp_path / "d.arff.gz", tmp_path / "d.xml"
    blob = gzip.compress(ARFF)
    arff.write_bytes(blob[:-10])
    xml.write_bytes(XML)
    with pytest.raises(ValueError, match=r"d\.arff\.gz: the compressed file is truncated"):
        formats.read_arff_multilabel(str(arff), str(xml))


def test_complete_archives_still_read(tmp_path):
    plain = tmp_path / "ok.txt"
    plain.write_bytes(XC)
    expected = formats.read_xc(str(plain))
    for kind, compress in (("gz", gzip.compress), ("bz2", bz2.compress)):
        p = tmp_path / f"ok.txt.{kind}"
        p.write_bytes(compress(XC))
        for a, b in zip(formats.read_xc(str(p)), expected):
            np.testing.assert_array_equal(a, b)


def test_missing_file_stays_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        formats.read_xc(str(tmp_path / "nope.txt.gz"))


@pytest.mark.parametrize("fmt", ["xc", "smat"])
def test_truncated_text_says_how_many_rows_it_has(tmp_path, fmt):
    raw, read = READERS[fmt]
    path = tmp_path / "d.txt"
    path.write_bytes(raw[:raw.rindex(b"\n", 0, len(raw) - 1) + 1])  # the last row cut off
    name = "N" if fmt == "xc" else "rows"
    with pytest.raises(ValueError, match=rf"d\.txt, line 1: the header says {name}=3 but the "
                                         rf"file has 2 rows"):
        read(str(path))


@pytest.mark.parametrize("read", [formats.read_xc, formats_naive.read_xc_naive])
def test_huge_row_count_in_the_header_allocates_nothing(tmp_path, read):
    """N = 10**8 in the header of a 2-row file: before, 1.6 GB of indptr were allocated
    before the count was found wrong."""
    path = tmp_path / "lying.txt"
    path.write_bytes(b"100000000 6 4\n0 1:1\n1 2:1\n")
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"the header says N=100000000 but the file has 2"):
            read(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak


@pytest.mark.parametrize("header, name", [(b"2 3000000000 5", "D"), (b"2 5 4294967296", "L"),
                                          (b"99999999999 5 5", "N")])
def test_header_beyond_int32_names_the_file(tmp_path, header, name):
    """Before: D above int32 read fine and failed later with a bare OverflowError."""
    path = tmp_path / "big.txt"
    path.write_bytes(header + b"\n0 1:1\n1 2:1\n")
    for read in (formats.read_xc, formats_naive.read_xc_naive):
        with pytest.raises(ValueError, match=rf"big\.txt, line 1: the header's {name}=\d+ "
                                             rf"exceeds 2147483647"):
            read(str(path))


def test_smat_cols_beyond_int32(tmp_path):
    path = tmp_path / "m.txt"
    path.write_bytes(b"1 2147483648\n0:1\n")
    with pytest.raises(ValueError, match=r"m\.txt, line 1: the header's cols=2147483648"):
        formats.read_smat(str(path))


def test_qid_is_parsed_as_an_integer(tmp_path):
    """Before: qids went through float64, so 2**53 + 1 and 2**53 merged into one query."""
    big = 2**53
    path = tmp_path / "q.txt"
    path.write_bytes(f"1 qid:{big + 1} 1:1\n0 qid:{big} 1:2\n2 qid:{2**63 - 1} 1:3\n"
                     f"1 qid:0 1:1\n".encode())
    for read in (formats.read_svmlight, formats_naive.read_svmlight_naive):
        qid = read(str(path))[1]
        assert qid.dtype == np.int64
        assert qid.tolist() == [big + 1, big, 2**63 - 1, 0]


@pytest.mark.parametrize("token", ["9223372036854775808", "99999999999999999999"])
def test_qid_beyond_int64_is_an_error(tmp_path, token):
    """Before: 99999999999999999999 silently became -2**63."""
    path = tmp_path / "q.txt"
    path.write_bytes(f"1 qid:3 1:1\n0 qid:{token} 1:2\n".encode())
    for read in (formats.read_svmlight, formats_naive.read_svmlight_naive):
        with pytest.raises(ValueError, match=rf"q\.txt, line 2: qid '{token}' does not fit in "
                                             rf"int64"):
            read(str(path))
