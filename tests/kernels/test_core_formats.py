"""Readers and writers of sparkxml_kernels.formats: real files, round trips, malformed lines.

The vectorised readers are compared with their line-by-line twins (formats_naive)."""
import gzip
import time

import numpy as np
import pytest
from _data import data_path

from sparkxml_kernels import formats as F
from sparkxml_kernels import formats_naive as FN


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            assert x.dtype == y.dtype, (x.dtype, y.dtype)
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y


def rows(indptr, ids):
    return [list(ids[indptr[i]:indptr[i + 1]]) for i in range(len(indptr) - 1)]


# ------------------------------------------------------------------------- real files
def test_bibtex_xc_shapes_and_speed():
    path = data_path("bibtex", "xc_split", "bibtex_train.txt")
    t = time.perf_counter()
    xi, xx, xd, yi, yy, d, L = F.read_xc(path)
    elapsed = time.perf_counter() - t
    assert (len(xi) - 1, d, L) == (4880, 1836, 159)
    assert xi.dtype == np.int64 and xx.dtype == np.int32 and xd.dtype == np.float32
    assert yi.dtype == np.int64 and yy.dtype == np.int32
    assert abs(len(xx) / 4880 - 68.5) < 1 and abs(len(yy) / 4880 - 2.38) < 0.05
    assert (xd == 1).all()
    # the first line of the file: "18,87,135 44:1 55:1 84:1 ..."
    assert list(yy[:3]) == [18, 87, 135] and list(xx[:3]) == [44, 55, 84]
    assert elapsed < 1.5, f"read_xc took {elapsed:.2f} s"


def test_bibtex_xc_matches_naive():
    path = data_path("bibtex", "xc_split", "bibtex_test.txt")
    assert_same(F.read_xc(path), FN.read_xc_naive(path))


def test_arff_bibtex_matches_xc_split_labels():
    """XC's Bibtex test rows are Mulan rows: same features, same labels (XML order)."""
    xc = F.read_xc(data_path("bibtex", "xc_split", "bibtex_test.txt"))
    by_features = {}
    for part in ("train", "test"):
        m = F.read_arff_multilabel(data_path("bibtex", "mulan_split", f"bibtex-{part}.arff"),
                                   data_path("bibtex", "mulan_split", "bibtex.xml"))
        assert m[5] == 1836 and len(m[6]) == 159
        for f, y in zip(rows(m[0], m[1]), rows(m[3], m[4])):
            by_features.setdefault(tuple(f), []).append(y)
    for f, y in zip(rows(xc[0], xc[1]), rows(xc[3], xc[4])):
        assert y in by_features[tuple(f)]


def test_arff_enron_matches_naive_and_uses_xml_order():
    arff, xml = data_path("enron", "enron-test.arff"), data_path("enron", "enron.xml")
    got = F.read_arff_multilabel(arff, xml)
    assert_same(got, FN.read_arff_multilabel_naive(arff, xml))
    xi, xx, xd, yi, yy, d, names = got
    assert (len(xi) - 1, d, len(names)) == (579, 1001, 53)
    # enron's label attributes are not in the XML's order: ids follow the XML
    attrs = [ln.split()[1] for ln in open(arff) if ln.lower().startswith("@attribute")]
    label_attrs = [a for a in attrs if a in set(names)]
    assert label_attrs != names and sorted(label_attrs) == sorted(names)
    assert names[0] == "A.A1"


def test_svmlight_rank_one_based_with_query_file():
    path = data_path("lightgbm_rank", "rank.test")
    query = data_path("lightgbm_rank", "rank.test.query")
    y, qid, xi, xx, xd, d = F.read_svmlight(path, query)
    assert_same((y, qid, xi, xx, xd, d), FN.read_svmlight_naive(path, query))
    assert len(y) == 768 and qid.max() + 1 == 50 and d == 300
    assert set(np.unique(y)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    assert np.array_equal(np.bincount(qid), np.loadtxt(query, dtype=int))
    # file indices are 1..300: column j - 1; zero_based keeps them (301 columns)
    z = F.read_svmlight(path, zero_based=True)
    assert z[1] is None and z[5] == 301 and np.array_equal(z[3], xx + 1)


# ------------------------------------------------------------------------- round trips
def random_csr(rng, n, d, density, values=True):
    indptr, indices, data = [0], [], []
    for _ in range(n):
        k = rng.binomial(d, density)
        idx = np.sort(rng.choice(d, size=k, replace=False))
        indices.extend(idx)
        data.extend(rng.normal(size=k) if values else np.ones(k))
        indptr.append(len(indices))
    return (np.array(indptr, np.int64), np.array(indices, np.int32),
            np.array(data, np.float32))


@pytest.mark.parametrize("seed", [0, 1])
def test_xc_round_trip(tmp_path, seed):
    rng = np.random.default_rng(seed)
    X = random_csr(rng, 60, 30, 0.15)
    Y = random_csr(rng, 60, 12, 0.1)       # some rows without labels and/or features
    p = tmp_path / "a.txt"
    F.write_xc(p, *X, Y[0], Y[1], 30, 12)
    got = F.read_xc(p)
    assert_same(got, (*X, Y[0], Y[1], 30, 12))
    assert_same(got, FN.read_xc_naive(p))
    text = p.read_text().splitlines()
    assert text[0] == "60 30 12"
    no_label = [i for i in range(60) if Y[0][i] == Y[0][i + 1] and X[0][i] < X[0][i + 1]]
    assert no_label and all(text[i + 1].startswith(" ") for i in no_label)


def test_smat_round_trip_six_decimals(tmp_path):
    rng = np.random.default_rng(3)
    X = random_csr(rng, 40, 25, 0.2)
    p = tmp_path / "s.txt"
    F.write_smat(p, *X, 25)
    line = next(ln for ln in p.read_text().splitlines()[1:] if ln)
    assert all(len(tok.split(":")[1].split(".")[1]) == 6 for tok in line.split())
    xi, xx, xd, d = F.read_smat(p)
    assert d == 25 and np.array_equal(xi, X[0]) and np.array_equal(xx, X[1])
    np.testing.assert_allclose(xd, X[2], atol=5e-7)
    assert_same((xi, xx, xd, d), FN.read_smat_naive(p))


def test_gzip_crlf_blank_rows_and_unsorted(tmp_path):
    p = tmp_path / "a.txt.gz"
    with gzip.open(p, "wt", newline="") as f:
        f.write("4 10 5\r\n3,1 7:0.5 2:-1e-3\r\n\r\n 4:2\r\n0\r\n\r\n\r\n")
    xi, xx, xd, yi, yy, d, L = F.read_xc(p)
    assert rows(xi, xx) == [[2, 7], [], [4], []]
    np.testing.assert_allclose(xd, [-1e-3, 0.5, 2.0])
    assert rows(yi, yy) == [[1, 3], [], [], [0]]
    assert_same((xi, xx, xd, yi, yy, d, L), FN.read_xc_naive(p))


def test_smat_empty_rows(tmp_path):
    p = tmp_path / "s.txt"
    p.write_text("3 4\n\n1:2.5 0:1\n\n")
    xi, xx, xd, d = F.read_smat(p)
    assert rows(xi, xx) == [[], [0, 1], []] and list(xd) == [1.0, 2.5]


def test_svmlight_qid_and_comments(tmp_path):
    p = tmp_path / "r.txt"
    p.write_text("# header comment\n2 qid:7 1:0.5 3:1 # doc a\n\n0 qid:7 2:1\n1 qid:9 3:2\n")
    y, qid, xi, xx, xd, d = F.read_svmlight(p)
    assert list(y) == [2, 0, 1] and list(qid) == [7, 7, 9] and d == 3
    assert rows(xi, xx) == [[0, 2], [1], [2]]
    assert_same((y, qid, xi, xx, xd, d), FN.read_svmlight_naive(p))
    q = tmp_path / "r.query"
    q.write_text("2\n1\n")
    with pytest.raises(ValueError, match="use one of them"):
        F.read_svmlight(p, q)


def test_arff_labels_in_the_middle_dense_nominal_missing(tmp_path):
    arff = tmp_path / "d.arff"
    arff.write_text(
        "% comment\n@relation x\n@attribute f0 numeric\n@attribute 'lab b' {0,1}\n"
        "@attribute colour {red,green}\n@attribute laba {0,1}\n@attribute f1 real\n\n@data\n"
        "{0 1.5,1 1,2 green,4 -2}\n"
        "% a comment line\n"
        "0,0,red,1,?\n"
        "{}\n")
    xml = tmp_path / "d.xml"
    xml.write_text('<?xml version="1.0"?><labels xmlns="http://mulan.sourceforge.net/labels">'
                   '<label name="laba"/><label name="lab b"/></labels>')
    got = F.read_arff_multilabel(arff, xml)
    xi, xx, xd, yi, yy, d, names = got
    assert names == ["laba", "lab b"] and d == 3
    assert rows(yi, yy) == [[1], [0], []]
    assert rows(xi, xx) == [[0, 1, 2], [2], []]
    assert list(xd[:3]) == [1.5, 1.0, -2.0] and np.isnan(xd[3])
    assert_same(got, FN.read_arff_multilabel_naive(arff, xml))


# ------------------------------------------------------------------------- malformed input
XC_BAD = [
    ("2 5 3\n0 1:1\n1,x 2:1\n", 3, "label id"),
    ("2 5 3\n0 1:1\n1 2:1:3\n", 3, "bad token"),
    ("2 5 3\n0 1:1\n1 2:abc\n", 3, "bad value"),
    ("2 5 3\n0 1:1\n1 7:1\n", 3, "out of range"),
    ("2 5 3\n0 1:1\n3 2:1\n", 3, "out of range"),
    ("2 5 3\n0 1:1\n1:1 2:1\n", 3, "starts with a space"),
    ("2 5 3\n0 1:1 1:2\n1 2:1\n", 2, "appears twice"),
    ("2 5 3\n0,0 1:1\n1 2:1\n", 2, "appears twice"),
    ("2 5 3\n0 1:1\n", 1, "file has 1 rows"),
    ("2 5 3\n0 1:1\n1 1:1\n2 1:1\n", 4, "more rows"),
    ("2 5\n0 1:1\n1 1:1\n", 1, "header"),
    ("2 5 3\n0 1:1\n1,,2 2:1\n", 3, "label id"),
    ("2 5 3\n0 1:1\n1 2:1 ,\n", 3, "bad token"),
]


@pytest.mark.parametrize("content,line,what", XC_BAD)
def test_xc_errors_name_file_and_line(tmp_path, content, line, what):
    p = tmp_path / "bad.txt"
    p.write_text(content)
    for reader in (F.read_xc, FN.read_xc_naive):
        with pytest.raises(ValueError, match=f"line {line}:.*{what}") as e:
            reader(p)
        assert str(p) in str(e.value)


SMAT_BAD = [
    ("2 4\n0:1\n1:1 x\n", 3, "bad token"),
    ("2 4\n0:1\n1:1,2:1\n", 3, "bad"),
    ("2 4\n0:1\n4:1\n", 3, "out of range"),
    ("2 4\n0:1 0:2\n\n", 2, "appears twice"),
    ("2 4\n0:1\n1:nan1\n", 3, "bad value"),
]


@pytest.mark.parametrize("content,line,what", SMAT_BAD)
def test_smat_errors(tmp_path, content, line, what):
    p = tmp_path / "bad.txt"
    p.write_text(content)
    for reader in (F.read_smat, FN.read_smat_naive):
        with pytest.raises(ValueError, match=f"line {line}:.*{what}"):
            reader(p)


SVM_BAD = [
    ("1 1:1\n1:2 3:1\n", 2, "start with its label"),
    ("1 1:1\n1 0:1\n", 2, "index 0"),
    ("1 1:1\n1 2:1 qid:3\n", 2, "qid"),
    ("1 qid:1 1:1\n1 2:1\n", 2, "every row must have 'qid:'"),
    ("1 1:1\n1 qid:1 2:1\n", 2, "every row must have 'qid:'"),
    ("1 1:1\nx 2:1\n", 2, "bad"),
    ("1 1:1\n1 2:1 2:3\n", 2, "appears twice"),
    ("1 1:1\n1,2 2:1\n", 2, "bad"),
]


@pytest.mark.parametrize("content,line,what", SVM_BAD)
def test_svmlight_errors(tmp_path, content, line, what):
    p = tmp_path / "bad.txt"
    p.write_text(content)
    for reader in (F.read_svmlight, FN.read_svmlight_naive):
        with pytest.raises(ValueError, match=f"line {line}:.*{what}"):
            reader(p)


def test_svmlight_num_features_and_query_errors(tmp_path):
    p = tmp_path / "r.txt"
    p.write_text("1 1:1\n0 5:1\n1 2:1\n")
    with pytest.raises(ValueError, match="line 2:.*out of range"):
        F.read_svmlight(p, num_features=4)
    assert F.read_svmlight(p, num_features=9)[5] == 9
    q = tmp_path / "r.query"
    q.write_text("2\n2\n")
    with pytest.raises(ValueError, match=r"r\.query, line 2:.*sum to 4.*3 rows"):
        F.read_svmlight(p, q)
    q.write_text("2\nx\n")
    with pytest.raises(ValueError, match=r"r\.query, line 2:.*group size"):
        F.read_svmlight(p, q)


ARFF_HEAD = "@relation r\n@attribute a numeric\n@attribute b {0,1}\n@attribute c {0,1}\n@data\n"
ARFF_BAD = [
    ("{0 1,1 1}\n{0 1,1}\n", 7, "sparse entry"),
    ("{0 1,1 1}\n{0 1,5 1}\n", 7, "out of range"),
    ("{0 1,1 1}\n{0 1,1 2}\n", 7, "values"),
    ("{0 1,1 1}\n1,1\n", 7, "dense row has 3"),
    ("{0 1,1 1}\n{0 1,2 ?}\n", 7, "missing value for label"),
    ("{0 1,1 1}\n{0 1,1 1,1 0}\n", 7, "appears twice"),
    ("{0 1,1 1}\n{0 x,1 1}\n", 7, "bad value"),
    ("{0 1,1 1}\n{0 1 1 1}\n", 7, "sparse entry"),
]


@pytest.mark.parametrize("content,line,what", ARFF_BAD)
def test_arff_errors(tmp_path, content, line, what):
    arff = tmp_path / "bad.arff"
    arff.write_text(ARFF_HEAD + content)
    xml = tmp_path / "l.xml"
    xml.write_text('<labels><label name="b"/><label name="c"/></labels>')
    for reader in (F.read_arff_multilabel, FN.read_arff_multilabel_naive):
        with pytest.raises(ValueError, match=f"line {line}:.*{what}"):
            reader(arff, xml)


def test_arff_xml_label_missing(tmp_path):
    arff = tmp_path / "a.arff"
    arff.write_text(ARFF_HEAD + "{0 1}\n")
    xml = tmp_path / "l.xml"
    xml.write_text('<labels><label name="zz"/></labels>')
    with pytest.raises(ValueError, match="label 'zz' is not an attribute"):
        F.read_arff_multilabel(arff, xml)


def test_kernels_formats_never_imports_pyspark():
    import subprocess
    import sys

    code = ("import sys; sys.modules['pyspark'] = None\n"
            "import sparkxml_kernels.formats, sparkxml_kernels.formats_naive, "
            "sparkxml_kernels.metrics\nprint('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


FUZZ_BASES = {
    "xc": "3 6 4\n0,2 1:0.5 4:1\n 2:3 5:1e-2\n3\n",
    "smat": "3 6\n1:0.5 4:1\n\n2:3 5:-1\n",
    "svm": "1 qid:1 1:0.5 4:1\n0 qid:1 2:3 # c\n2 qid:2 5:1\n",
    "arff": ARFF_HEAD + "{0 1,1 1}\n0.5,0,1\n% c\n{2 1}\n",
}


def _outcome(reader, *paths):
    try:
        return "ok", reader(*paths)
    except ValueError as e:
        return "err", str(e)


@pytest.mark.parametrize("fmt", sorted(FUZZ_BASES))
def test_fuzzed_files_fast_and_naive_agree(tmp_path, fmt):
    """Random edits of a valid file: same arrays, or the same error (line and message)."""
    rng = np.random.default_rng(sorted(FUZZ_BASES).index(fmt))
    base = FUZZ_BASES[fmt]
    first = base.find("@data") + 6 if fmt == "arff" else base.find("\n") + 1 if fmt in (
        "xc", "smat") else 0
    alphabet = list(" ,:\n\t1x0-.{}?e#%q")
    xml = tmp_path / "l.xml"
    xml.write_text('<labels><label name="c"/><label name="b"/></labels>')
    readers = {"xc": (F.read_xc, FN.read_xc_naive), "smat": (F.read_smat, FN.read_smat_naive),
               "svm": (F.read_svmlight, FN.read_svmlight_naive),
               "arff": (F.read_arff_multilabel, FN.read_arff_multilabel_naive)}[fmt]
    for trial in range(120):
        s = list(base)
        for _ in range(int(rng.integers(1, 3))):
            pos = int(rng.integers(first, len(s) + 1))
            op = int(rng.integers(3))
            if op == 0 and pos < len(s):
                del s[pos]
            elif op == 1:
                s.insert(pos, alphabet[int(rng.integers(len(alphabet)))])
            elif pos < len(s):
                s[pos] = alphabet[int(rng.integers(len(alphabet)))]
        p = tmp_path / f"f{trial}.txt"
        p.write_text("".join(s))
        args = (p, xml) if fmt == "arff" else (p,)
        fast, naive = _outcome(readers[0], *args), _outcome(readers[1], *args)
        assert fast[0] == naive[0], ("".join(s), fast, naive)
        if fast[0] == "err":
            assert fast[1] == naive[1]
        else:
            assert_same(fast[1], naive[1])
