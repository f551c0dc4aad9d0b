"""One contract per concept, across every family: every model is a SparkXMLPredictorModel,
every fit leaves a TrainingSummary (trainingSeconds, numWorkers, workerInfo) that is saved
with the model, every estimator takes ``verbose`` and labels its Spark jobs, and every
constructor follows the same keyword convention."""
import inspect
import json
import logging
import os

import numpy as np
import pytest
from _jobs import group_descriptions
from pyspark.ml import Estimator, Model
from pyspark.ml.linalg import Vectors

import sparkxml
from sparkxml._core.base import SparkXMLPredictorModel
from sparkxml._core.summary import TrainingSummary

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "golden")


def _public(kind):
    return [getattr(sparkxml, n) for n in sparkxml.__all__
            if isinstance(getattr(sparkxml, n), type) and issubclass(getattr(sparkxml, n), kind)]


# ------------------------------------------------------------------ class contracts
def test_every_public_model_is_a_predictor_model():
    models = _public(Model)
    assert len(models) >= 15
    for cls in models:
        assert issubclass(cls, SparkXMLPredictorModel), cls
        # no family re-implements what the base holds
        for name in ("_save_arrays", "_from_arrays", "copy", "hasSummary", "summary"):
            owner = next(c for c in cls.__mro__ if name in c.__dict__)
            assert owner is SparkXMLPredictorModel, (cls, name, owner)


def test_every_summary_class_is_a_training_summary():
    from sparkxml.fastxml.fastxml import FastXMLTrainingSummary
    from sparkxml.fm.base import FMTrainingSummary
    from sparkxml.forest.base import TreeTrainingSummary
    from sparkxml.gbt.summary import GBTTrainingSummary
    from sparkxml.labeltree.labeltree import LabelTreeTrainingSummary
    from sparkxml.linear.svc import LinearSVCTrainingSummary

    for cls in (FastXMLTrainingSummary, FMTrainingSummary, TreeTrainingSummary,
                GBTTrainingSummary, LinearSVCTrainingSummary, LabelTreeTrainingSummary):
        assert issubclass(cls, TrainingSummary)
    for cls in _public(Model):
        if cls._summary_class is not None:
            assert issubclass(cls._summary_class, TrainingSummary), cls


def test_one_constructor_convention():
    """keyword-only __init__ and setParams with the same keywords, whose defaults are the
    params' defaults; unknown keywords fail the same way everywhere."""
    for cls in _public(Estimator):
        init = inspect.signature(cls.__init__)
        setp = inspect.signature(cls.setParams)
        names = [n for n in init.parameters if n != "self"]
        assert names == [n for n in setp.parameters if n != "self"], cls
        inst = cls()
        assert inst._input_kwargs == {}, cls  # pyspark's keyword_only ran
        for n in names:
            p = init.parameters[n]
            assert p.kind == p.KEYWORD_ONLY, (cls, n)
            assert inst.hasParam(n), (cls, n)
            want = inst.getOrDefault(n) if inst.hasDefault(n) else None
            if p.default is not None:
                assert p.default == want or (p.default != p.default and want != want), \
                    (cls, n, p.default, want)
        with pytest.raises(TypeError, match=f"{cls.__name__}.__init__\\(\\) got unknown "
                                            f"param\\(s\\) 'nope'"):
            cls(nope=1)
        with pytest.raises(TypeError, match="setParams\\(\\) got unknown param\\(s\\) 'nope'"):
            inst.setParams(nope=1)
        if cls.__name__ != "FieldEncoder":  # one Spark aggregate: nothing to report
            assert "verbose" in names, cls


def test_golden_directories_without_a_summary_load_without_one():
    from sparkxml import DecisionTreeClassificationModel, FastXMLModel, LinearSVCModel

    tree = DecisionTreeClassificationModel.load(os.path.join(GOLDEN,
                                                             "decision_tree_classifier", "model"))
    assert not tree.hasSummary and tree.trainingInfo == {}
    assert not FastXMLModel.load(os.path.join(GOLDEN, "fastxml", "model")).hasSummary
    svc = LinearSVCModel.load(os.path.join(GOLDEN, "linear_svc", "model"))
    # saved before the common fields were: the family's fields, defaults for the rest
    assert svc.hasSummary and svc.summary.totalIterations > 0
    assert svc.summary.trainingSeconds == 0.0 and svc.summary.workerInfo == []


# ------------------------------------------------------------------ fitted families
@pytest.fixture(scope="module")
def binary(spark):
    rng = np.random.default_rng(3)
    n, d = 240, 6
    X = rng.normal(size=(n, d))
    y = ((X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=n)) > 0).astype(float)
    rows = [(Vectors.dense(X[i]), float(y[i])) for i in range(n)]
    return spark.createDataFrame(rows, ["features", "label"]).cache()


@pytest.fixture(scope="module")
def fields(spark):
    """One-hot rows of 3 fields (4 + 3 + 5 features), a regression target."""
    rng = np.random.default_rng(5)
    n, starts, sizes = 300, [0, 4, 7], [4, 3, 5]
    rows = []
    for _ in range(n):
        idx = [s + int(rng.integers(k)) for s, k in zip(starts, sizes)]
        y = float(idx[0] % 2 + 0.5 * (idx[1] == 5) + 0.1 * rng.normal())
        rows.append((Vectors.sparse(12, idx, [1.0] * 3), y))
    return spark.createDataFrame(rows, ["features", "label"]).cache(), starts


@pytest.fixture(scope="module")
def multilabel(spark):
    from sparkxml.synthetic import make_multilabel, rows_frame

    X, Y = make_multilabel(n_rows=200, n_features=40, n_labels=10, seed=2)
    return rows_frame(spark, X, Y, 0, 200, 40)


def _estimators(binary, fields, multilabel):
    from sparkxml import (
        DecisionTreeRegressor,
        FastXML,
        FMRegressor,
        GBFMRegressor,
        GBTRegressor,
        LinearSVC,
        Parabel,
        PfastreXML,
        RandomForestClassifier,
    )

    fdf, starts = fields
    return {
        "gbt": (GBTRegressor(maxIter=3, maxDepth=2, numWorkers=1), binary),
        "linear": (LinearSVC(maxIter=5, tol=0.0, numWorkers=1), binary),
        "fm": (FMRegressor(solver="als", maxIter=3, factorSize=2, tol=0.0, numWorkers=1),
               fdf),
        "gbfm": (GBFMRegressor(fieldStarts=starts, numStages=3, numWorkers=1,
                                jointIter=10, burnIn=2), fdf),
        "tree": (DecisionTreeRegressor(maxDepth=3, numWorkers=1), binary),
        "forest": (RandomForestClassifier(numTrees=3, maxDepth=3, numWorkers=1), binary),
        "fastxml": (FastXML(numTrees=2, numWorkers=1), multilabel),
        "pfastrexml": (PfastreXML(numTrees=2, numWorkers=1), multilabel),
        "parabel": (Parabel(numTrees=2, numWorkers=1, maxLeafLabels=4), multilabel),
    }


def _same_json(a, b):
    return json.loads(json.dumps(a, default=str)) == json.loads(json.dumps(b, default=str))


def test_every_family_saves_and_loads_its_training_summary(binary, fields, multilabel,
                                                           tmp_path):
    for family, (est, df) in _estimators(binary, fields, multilabel).items():
        model = est.fit(df)
        assert model.hasSummary, family
        s = model.summary
        assert isinstance(s, TrainingSummary), family
        assert s.trainingSeconds > 0, family
        assert s.numWorkers >= 1, family
        assert s.workerInfo and all(isinstance(w, dict) for w in s.workerInfo), family
        path = str(tmp_path / family)
        model.write().save(path)
        loaded = type(model).load(path)
        assert loaded.hasSummary, family
        t = loaded.summary
        assert type(t) is type(s), family
        assert t.trainingSeconds == s.trainingSeconds, family
        assert t.numWorkers == s.numWorkers, family
        assert _same_json(t.workerInfo, s.workerInfo), family
        if s.checksSeconds is not None:
            assert t.checksSeconds == pytest.approx(s.checksSeconds), family
        # and the copy of a model keeps it
        assert model.copy().summary is s
        # the summary travels with the arrays, the predictions do not change
        a = model.transform(df).drop(*df.columns).collect()
        b = loaded.transform(df).drop(*df.columns).collect()
        assert a == b, family


# ------------------------------------------------------------------ progress and labels
def _lines(caplog, word):
    return [r.getMessage().split(" (")[0].split(":")[0] for r in caplog.records
            if f" {word} " in r.getMessage() and "could not reach" not in r.getMessage()]


@pytest.mark.parametrize("family,unit,phases", [
    ("linear", "round", ("checks", "train")),
    ("fm", "iteration", ("checks", "train")),
    ("gbfm", "stage", ("checks", "train")),
    ("tree", "tree", ("checks", "train")),
    ("forest", "tree", ("checks", "train")),
])
def test_verbose_fit_logs_progress_and_labels_its_jobs(spark, binary, fields, multilabel,
                                                       caplog, family, unit, phases):
    caplog.set_level(logging.INFO, logger="sparkxml")
    est, df = _estimators(binary, fields, multilabel)[family]
    est.setVerbose(1)
    model = est.fit(df)
    name = type(est).__name__
    s = model.summary
    total = {"linear": 5, "fm": 3, "gbfm": 3, "tree": 1, "forest": 3}[family]
    done = {"linear": s.totalIterations if family == "linear" else 0,
            "fm": len(s.history.get("seconds", [])) if family == "fm" else 0,
            "gbfm": len(s.history.get("seconds", [])) if family == "gbfm" else 0,
            "tree": 1, "forest": 3}[family]
    assert done >= 1
    want = [f"{name} {unit} {i}/{total}" for i in range(1, done + 1)]
    got = _lines(caplog, unit)
    # sent live by the training task, not replayed from the summary afterwards
    assert not any("could not reach" in r.getMessage() for r in caplog.records)
    if family == "forest":  # several trees may finish in one level: a line per level
        assert got and got[-1] == want[-1] and set(got) <= set(want), got
    else:
        assert got == want, got
    for phase in phases:
        assert any(r.getMessage().startswith(f"{name} {phase}: ") for r in caplog.records)
    assert group_descriptions(spark.sparkContext, f"sparkxml-{name}-{est.uid}-") == {f"sparkxml {name} {est.uid}: {p}"
                                                   for p in phases}
    sc = spark.sparkContext
    assert sc.getLocalProperty("spark.jobGroup.id") is None
    assert not any(t.startswith("sparkxml") for t in sc.getJobTags())


def test_linear_svc_progress_lines_carry_the_summary_numbers(binary, caplog):
    from sparkxml import LinearSVC

    caplog.set_level(logging.INFO, logger="sparkxml")
    model = LinearSVC(maxIter=4, tol=0.0, numWorkers=1, verbose=2).fit(binary)
    s = model.summary
    lines = [r.getMessage() for r in caplog.records if " round " in r.getMessage()]
    rows = dict(s._rows())
    assert [int(ln.split(" round ")[1].split("/")[0]) for ln in lines] == \
        [r for r in rows if r % 2 == 0 or r == s.totalIterations]
    for ln in lines:
        r = int(ln.split(" round ")[1].split("/")[0])
        primal = float(ln.split("primal=")[1].split()[0])
        assert primal == pytest.approx(rows[r]["primal"], rel=1e-5)


def test_silent_by_default(binary, caplog):
    from sparkxml import LinearSVC, RandomForestClassifier

    caplog.set_level(logging.INFO, logger="sparkxml")
    LinearSVC(maxIter=2, numWorkers=1).fit(binary)
    RandomForestClassifier(numTrees=2, maxDepth=2, numWorkers=1).fit(binary)
    assert not [r for r in caplog.records if r.name == "sparkxml"]
