"""``sparkxml gbt|lambdamart train|predict|evaluate`` through cli.main on small generated
files (TSV and svmlight), against the kernel predictor of the saved model."""
import os
import re

import numpy as np
import pytest

import sparkxml_kernels
from sparkxml.cli import main

FAST = ["--max-iter", "4", "--max-depth", "3", "--num-workers", "2", "--seed", "1"]


def _write_tsv(path, y, X):
    np.savetxt(path, np.column_stack([y, X]), delimiter="\t", fmt="%.6g")


def _write_svmlight(path, y, X, qid=None):
    with open(path, "w") as f:
        for i in range(len(y)):
            q = f" qid:{qid[i]}" if qid is not None else ""
            feats = " ".join(f"{j + 1}:{X[i, j]:.6g}" for j in range(X.shape[1]) if X[i, j] != 0)
            f.write(f"{y[i]:g}{q} {feats}\n")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(7)
    X = np.round(rng.normal(size=(360, 5)), 3)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(float)
    _write_tsv(d / "train.tsv", y[:240], X[:240])
    _write_tsv(d / "valid.tsv", y[240:], X[240:])
    yr = X[:, 0] * 2.0 + X[:, 2]
    _write_svmlight(d / "reg.svm", yr[:240], X[:240])
    _write_svmlight(d / "reg_test.svm", yr[240:], X[240:])
    qid = np.repeat(np.arange(36), 10)
    rel = np.clip(np.round(X[:, 0] + 1.5), 0, 3)
    _write_svmlight(d / "rank.svm", rel[:240], X[:240], qid[:240])
    _write_svmlight(d / "rank_test.svm", rel[240:], X[240:], qid[240:])
    return d, X, y


def _run(argv, capsys):
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def _metrics(out):
    """{name: value} from ``name 0.1234`` lines: every metric printed with 4 decimals."""
    lines = out.strip().splitlines()
    assert all(re.fullmatch(r"[A-Za-z0-9@]+ -?\d+\.\d{4}", line) for line in lines), lines
    return {name: float(v) for name, v in (line.split(" ") for line in lines)}


def _floats(path):
    return np.array([[float(v) for v in line.split("\t")] for line in open(path).read().split()])


def test_gbt_classifier_tsv_train_predict_evaluate(spark, files, capsys):
    d, X, y = files
    model = str(d / "clf")
    rc, out, err = _run(["gbt", "train", "--data", str(d / "train.tsv"), "--valid",
                         str(d / "valid.tsv"), "--model", model] + FAST, capsys)
    assert rc == 0, err
    assert "trained 4 trees" in out and "validation logloss" in out
    # rounds counted from 1: the best of 4 rounds is round 1..4 (bestIteration + 1)
    best = re.search(r"best (\d\.\d{4}) at round (\d+) of 4", out)
    assert best and 1 <= int(best.group(2)) <= 4, out
    rc, out, err = _run(["gbt", "predict", "--data", str(d / "valid.tsv"), "--model", model,
                         "--output", str(d / "clf.txt")], capsys)
    assert rc == 0, err
    # binary: P(class 1) a line, equal to the saved model's kernel predictor
    want = sparkxml_kernels.load_model(model).predict_proba(X[240:])[:, 1]
    np.testing.assert_allclose(_floats(d / "clf.txt").ravel(), want, rtol=1e-6)
    rc, out, err = _run(["gbt", "evaluate", "--data", str(d / "valid.tsv"), "--model", model],
                        capsys)
    assert rc == 0, err
    metrics = _metrics(out)
    assert set(metrics) == {"auc", "accuracy", "logLoss"}
    assert metrics["auc"] > 0.9 and metrics["accuracy"] > 0.8  # fractions, not percent


def test_train_refuses_existing_model_before_training(spark, files, capsys, tmp_path):
    d, _, _ = files
    existing = tmp_path / "taken"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    # the data file does not exist: the path check must come first, before any reading
    for algo in ("gbt", "lambdamart", "fastxml"):
        rc, _, err = _run([algo, "train", "--data", str(d / "missing.txt"), "--model",
                           str(existing)], capsys)
        assert rc == 2 and "--overwrite" in err, (algo, err)
    assert (existing / "keep.txt").read_text() == "mine"


def test_gbt_regression_svmlight_overwrite(spark, files, capsys):
    d, X, _ = files
    model = str(d / "reg")
    for extra in ([], ["--overwrite"]):
        rc, _, err = _run(["gbt", "train", "--task", "regression", "--data", str(d / "reg.svm"),
                           "--model", model] + FAST + extra, capsys)
        assert rc == 0, err
    rc, _, err = _run(["gbt", "predict", "--data", str(d / "reg_test.svm"), "--model", model,
                       "--output", str(d / "reg.txt")], capsys)
    assert rc == 0, err
    np.testing.assert_allclose(_floats(d / "reg.txt").ravel(),
                               sparkxml_kernels.load_model(model).predict(X[240:]), rtol=1e-6)
    rc, out, _ = _run(["gbt", "evaluate", "--data", str(d / "reg_test.svm"), "--model", model],
                      capsys)
    assert rc == 0 and set(_metrics(out)) == {"rmse", "mae", "r2"}


def test_lambdamart_svmlight_qid(spark, files, capsys):
    d, X, _ = files
    model = str(d / "rank")
    rc, out, err = _run(["lambdamart", "train", "--data", str(d / "rank.svm"), "--model", model]
                        + FAST, capsys)
    assert rc == 0, err
    rc, _, err = _run(["lambdamart", "predict", "--data", str(d / "rank_test.svm"), "--model",
                       model, "--output", str(d / "rank.txt")], capsys)
    assert rc == 0, err
    np.testing.assert_allclose(_floats(d / "rank.txt").ravel(),
                               sparkxml_kernels.load_model(model).predict(X[240:]), rtol=1e-6)
    rc, out, err = _run(["lambdamart", "evaluate", "--data", str(d / "rank_test.svm"),
                         "--model", model], capsys)
    assert rc == 0, err
    ndcg = _metrics(out)
    assert list(ndcg) == ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10"]
    assert all(0.0 <= v <= 1.0 for v in ndcg.values())
    # a ranking model is not a GBT model, and the message says what was found
    rc, _, err = _run(["gbt", "predict", "--data", str(d / "rank_test.svm"), "--model", model,
                       "--output", str(d / "x.txt")], capsys)
    assert rc == 2 and "LambdaMARTModel" in err


def test_bad_input_names_file_and_line(spark, files, capsys, tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("1\t0.5\t2\n0\toops\t1\n")
    rc, _, err = _run(["gbt", "train", "--data", str(bad), "--model", str(tmp_path / "m")],
                      capsys)
    assert rc == 2 and "bad.tsv, line 2" in err and "oops" in err
    rc, _, err = _run(["lambdamart", "train", "--data", str(files[0] / "train.tsv"), "--model",
                       str(tmp_path / "m2")], capsys)
    assert rc == 2 and "--query" in err
    assert not os.path.exists(tmp_path / "m") and not os.path.exists(tmp_path / "m2")


def test_precompile_command_runs_without_spark_and_names_a_bad_group(capsys):
    from sparkxml.cli import main

    assert main(["precompile", "--groups", "no_such_group", "--jobs", "1"]) == 2
    assert "no_such_group" in capsys.readouterr().err
    # a real group: its kernels compile (or load) into the cache; no Spark session is made
    from sparkxml_kernels.precompile import read_manifest

    n = len(read_manifest(groups={"gbt_threads"}))
    assert n > 0
    assert main(["precompile", "--groups", "gbt_threads", "--jobs", "1"]) == 0
    assert f"precompiled {n} of {n} signatures" in capsys.readouterr().out


def test_help_defaults_are_the_estimators():
    """--help shows each training option's default; an option not given is not passed, so
    that default must be the estimator's own."""
    from sparkxml.cli import boost
    from sparkxml.gbt.estimators import GBTClassifier, GBTRegressor
    from sparkxml.gbt.lambdamart import LambdaMART

    for options, estimators in ((boost._TRAIN_OPTIONS, (GBTClassifier(), GBTRegressor(),
                                                        LambdaMART())),
                                (boost._GBT_OPTIONS, (GBTClassifier(),)),
                                (boost._RANK_OPTIONS, (LambdaMART(),))):
        for flag, param, typ, _, default, choices in options:
            for est in estimators:
                p = est.getParam(param)
                if est.hasDefault(p):
                    assert str(est.getOrDefault(p)) == default, (flag, type(est).__name__)
                    assert type(est.getOrDefault(p)) is typ, flag
                else:  # derived from the data or the session: the help says from what
                    assert not default[0].isdigit(), flag
                for value in choices or ():  # each choice is a value the estimator takes
                    est.copy({p: value})._validate_params()
