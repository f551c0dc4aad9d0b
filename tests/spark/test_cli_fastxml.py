"""``sparkxml fastxml demo|train|evaluate`` through cli.main: what it prints (P@k as fractions
in [0, 1], 4 decimals) and what it leaves on disk (nothing, unless --model names a place)."""
import os
import re
import tempfile

import numpy as np
import pytest

from sparkxml.cli import main

FAST = ["--num-trees", "2", "--num-workers", "2"]


def _precisions(out):
    """{k: P@k} from the ``P@k 0.1234`` lines, which must be the only P@ lines."""
    lines = [line for line in out.splitlines() if line.startswith("P@")]
    found = [re.fullmatch(r"P@(\d+) (\d\.\d{4})", line) for line in lines]
    assert lines and all(found), lines
    return {int(m.group(1)): float(m.group(2)) for m in found}


@pytest.fixture(scope="module")
def xc_files(tmp_path_factory):
    """A small Extreme Classification Repository text file pair (labels from features)."""
    from sparkxml.synthetic import make_multilabel

    d = tmp_path_factory.mktemp("xc")
    (xi, xj, xv), (yi, yj) = make_multilabel(n_rows=600, n_features=300, n_labels=40, seed=3)

    def write(path, rows):
        with open(path, "w") as f:
            f.write(f"{len(rows)} 300 40\n")
            for i in rows:
                labels = ",".join(str(j) for j in yj[yi[i]:yi[i + 1]])
                feats = " ".join(f"{j}:{v:g}" for j, v in zip(xj[xi[i]:xi[i + 1]],
                                                              xv[xi[i]:xi[i + 1]]))
                f.write(f"{labels} {feats}\n")

    write(d / "train.txt", range(0, 500))
    write(d / "test.txt", range(500, 600))
    return d


def test_demo_prints_fractions_and_leaves_no_model_in_the_temp_dir(spark, xc_files, tmp_path,
                                                                   monkeypatch, capsys):
    """The demo prints P@k as fractions, as XMLEvaluator returns them, and leaves no model
    folder in the temp dir unless --model says where to keep it."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))  # tempfile.gettempdir() is now `tmp`
    before = sorted(os.listdir(tempfile.gettempdir()))
    data = ["--data", str(xc_files / "train.txt"), "--test", str(xc_files / "test.txt")]
    assert main(["fastxml", "demo"] + data + FAST) == 0
    out = capsys.readouterr().out
    p = _precisions(out)
    assert sorted(p) == [1, 3, 5] and all(0.0 <= v <= 1.0 for v in p.values()), p
    assert p[1] > 0.3, p  # fractions, not percent divided twice
    assert sorted(os.listdir(tempfile.gettempdir())) == before
    assert "temporary directory (removed; pass --model to keep it)" in out

    model = tmp_path / "kept"
    assert main(["fastxml", "demo", "--model", str(model)] + data + FAST) == 0
    out = capsys.readouterr().out
    assert os.path.isdir(model) and f"model saved to {model}" in out
    assert sorted(os.listdir(tempfile.gettempdir())) == before
    # the demo, like train, does not replace a folder unless told to
    assert main(["fastxml", "demo", "--model", str(model)] + data + FAST) == 2
    assert "--overwrite" in capsys.readouterr().err


def test_train_then_evaluate_prints_what_xml_evaluator_returns(spark, xc_files, capsys):
    from sparkxml.datasets import read_xc
    from sparkxml.evaluation import XMLEvaluator
    from sparkxml.fastxml.fastxml import FastXMLModel

    model = str(xc_files / "model")
    assert main(["fastxml", "train", "--data", str(xc_files / "train.txt"), "--model", model]
                + FAST) == 0
    assert f"model saved to {model}" in capsys.readouterr().out
    test = str(xc_files / "test.txt")
    assert main(["fastxml", "evaluate", "--data", test, "--model", model]) == 0
    printed = _precisions(capsys.readouterr().out)
    pred = FastXMLModel.load(model).setTopK(5).transform(read_xc(spark, test))
    want = {k: XMLEvaluator(metricName="precisionAtK", k=k).evaluate(pred) for k in (1, 3, 5)}
    np.testing.assert_allclose([printed[k] for k in (1, 3, 5)],
                               [want[k] for k in (1, 3, 5)], atol=5e-5)
